#!/usr/bin/env bash
# The extension on a source-built, assert-enabled PostgreSQL: build the server
# (test/pg/build-server.sh, cached), build the extension against it with
# -Werror, then pg_regress, the isolation specs and the TAP suites, and a scan
# of every server log for assertion failures. Prints "ok N - ..." /
# "not ok N - ..." lines, one per test file and check.
#
#   test/matrix/run.sh MAJOR [FLAVOR]     MAJOR 15 or 18, FLAVOR assert (default)
#   test/matrix/run.sh MAJOR debian       Debian's own binary packages, inside the
#                                         chroot of test/matrix/debian.sh (which
#                                         calls it so, with FENCING_MATRIX_PG_CONFIG)
#
# From 19 on, the pg_regress files of test/pg19 (write paths that only 19
# has) run too, after the common ones.
#   FENCING_MATRIX_PORT                   the scratch cluster's port (default 5540MAJOR)
#   FENCING_MATRIX_TAP=0                  skip the TAP suites (a quick local run)
set -uo pipefail
MAJOR=${1:?usage: run.sh MAJOR [FLAVOR]}
FLAVOR=${2:-assert}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PORT=${FENCING_MATRIX_PORT:-$((55400 + MAJOR))}
n=0
check() {  # check OK DESCRIPTION
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

if [ "$FLAVOR" = debian ]; then
    PG_CONFIG=${FENCING_MATRIX_PG_CONFIG:?debian flavor: set FENCING_MATRIX_PG_CONFIG}
    "$PG_CONFIG" --version >/dev/null
    check $? "PostgreSQL $MAJOR from Debian's binary packages ($PG_CONFIG)"
else
    PG_CONFIG=$(bash "$ROOT/test/pg/build-server.sh" "$MAJOR" "$FLAVOR")
    check $? "PostgreSQL $MAJOR ($FLAVOR) built from Debian's source"
fi
[ -x "$PG_CONFIG" ] || exit 1
VERSION=$("$PG_CONFIG" --version)
BINDIR=$("$PG_CONFIG" --bindir)
echo "# $VERSION at $BINDIR"

source "$ROOT/test/matrix/lib.sh"
WORK=$(mktemp -d "/tmp/fencing-matrix-$MAJOR.XXXXXX")
trap 'FENCING_PGPORT=$PORT PATH="$BINDIR:$PATH" bash "$WORK/test/cluster.sh" stop >/dev/null 2>&1; [ -n "${FENCING_MATRIX_KEEP:-}" ] || rm -rf "$WORK"' EXIT
install_extension "$PG_CONFIG" "$WORK"
rc=$?
check $rc "the extension builds against $VERSION with -Wall -Wextra -Werror and installs"
[ $rc -eq 0 ] || exit 1
cd "$WORK" || exit 1

export PATH="$BINDIR:$PATH"
export FENCING_PGPORT=$PORT
bash test/cluster.sh stop >/dev/null 2>&1
bash test/cluster.sh start
eval "$(bash test/cluster.sh env)"
make -s PG_CONFIG="$PG_CONFIG" installcheck TAP_TESTS= >regress.log 2>&1
if [ "$MAJOR" -ge 19 ]; then
    # Write paths that only 19 has: their own input directory and file list.
    make -s PG_CONFIG="$PG_CONFIG" installcheck TAP_TESTS= ISOLATION= \
        REGRESS="$(cd test/pg19/sql && ls ./*.sql | sed 's|^\./||; s|\.sql$||' | tr '\n' ' ')" \
        REGRESS_OPTS="--inputdir=test/pg19 --outputdir=results-pg19 --load-extension=fencing" \
        >pg19.log 2>&1
    pg19_rc=$?
    cat pg19.log >>regress.log
    check "$pg19_rc" "$VERSION: the pg_regress files only 19 runs (test/pg19) ran to the end"
    # REPACK under raisers, on the same server (its log is scanned below).
    bash test/pg19/repack.sh >repack19.log 2>&1
    repack_rc=$?
    grep -E '^(not )?ok ' repack19.log | sed "s/^\(not \)\{0,1\}ok [0-9]* - /&$VERSION REPACK: /"
    check "$repack_rc" "$VERSION: REPACK under raisers (test/pg19/repack.sh) ran to its end"
    [ "$repack_rc" -ne 0 ] && grep -vE '^(not )?ok ' repack19.log | tail -30 | sed 's/^/# /'
fi
# One line per pg_regress / isolation test file: "test name ... ok" up to 15,
# "ok N - name" / "not ok N - name" from 16 on.
while read -r name verdict; do
    check "$([ "$verdict" = ok ] && echo 0 || echo 1)" "$VERSION: $name"
done < <(sed -nE -e 's/^(test| ) *([A-Za-z0-9_-]+) +\.\.\. (ok|FAILED).*/\2 \3/p' \
    -e 's/^ok [0-9]+ +[-+] +([A-Za-z0-9_-]+) .*/\1 ok/p' \
    -e 's/^not ok [0-9]+ +[-+] +([A-Za-z0-9_-]+) .*/\1 FAILED/p' regress.log)
if grep -qE 'FAILED|^not ok' regress.log; then
    cat regression.diffs output_iso/regression.diffs results-pg19/regression.diffs 2>/dev/null |
        head -200 | sed 's/^/# /'
fi
SERVER_LOG=/tmp/fencing-cluster-$PORT/server.log
crashes=$(crash_lines "$SERVER_LOG")
scan_rc=$?
[ -n "$crashes" ] && echo "$crashes" | head -20 | sed 's/^/# /'
check "$([ $scan_rc -eq 0 ] && [ -z "$crashes" ] && echo 0 || echo 1)" \
    "$VERSION: no assertion failure, PANIC or crashed backend in the pg_regress and isolation server log"
bash test/cluster.sh stop

if [ "${FENCING_MATRIX_TAP:-1}" != 0 ]; then
    # The TAP suites, on clusters of their own; their "ok N" lines go through
    # as they are (the suite counts them), their server logs are scanned.
    # Every TAP file but those needing another extension's library that
    # exists only for Debian's own server packages: 082 needs pg_cron
    # (postgresql-15-cron), built for Debian's PostgreSQL 15, where the tap
    # suite runs it; a source-built server has none.
    tap_files=()
    for f in test/t/[0-9]*.pl; do
        if [ "$(basename "$f")" = 082_retire_cron.pl ] &&
            [ ! -e "$("$PG_CONFIG" --pkglibdir)/pg_cron.so" ]; then
            echo "# $VERSION: not run here: $(basename "$f") (no pg_cron for this server; the tap suite runs it on Debian's 15)"
            continue
        fi
        tap_files+=("$f")
    done
    TESTDIR=$WORK/build/tap PG_CONFIG="$PG_CONFIG" bash test/t/run.sh "${tap_files[@]}" 2>&1 | tee tap.log |
        grep -E '^(not )?ok ' | sed "s/^\(not \)\{0,1\}ok [0-9]* - /&$VERSION TAP: /"
    tap_rc=${PIPESTATUS[0]}
    check "$tap_rc" "$VERSION: the TAP suites exit cleanly"
    [ "$tap_rc" -ne 0 ] && grep -vE '^(not )?ok ' tap.log | tail -60 | sed 's/^/# /'
    logs=(build/tap/tmp_check/log/*.log)
    crashes=$(crash_lines "${logs[@]}")
    scan_rc=$?
    [ -n "$crashes" ] && echo "$crashes" | head -20 | sed 's/^/# /'
    check "$([ $scan_rc -eq 0 ] && [ -z "$crashes" ] && echo 0 || echo 1)" \
        "$VERSION: no assertion failure, PANIC or crashed backend in the TAP suites' ${#logs[@]} logs"
fi
