#!/usr/bin/env bash
# pg_regress and the isolation specs against a server running under Valgrind
# memcheck: PostgreSQL built with USE_VALGRIND (test/pg/build-server.sh MAJOR
# valgrind, which also keeps PostgreSQL's own src/tools/valgrind.supp), every
# backend traced. Counts the memcheck errors whose stack has a frame in
# fencing.so; prints "ok N - ..." lines and a summary, and fails on any
# such error. Slow (tens of minutes): `make valgrind`, not part of `make test`.
#
#   test/matrix/valgrind.sh [MAJOR]     15 (default) or 18
#   FENCING_VALGRIND_PORT               the cluster's port (default 55490)
set -uo pipefail
MAJOR=${1:-15}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PORT=${FENCING_VALGRIND_PORT:-55490}
source "$ROOT/test/matrix/lib.sh"
PG_CONFIG=$(bash "$ROOT/test/pg/build-server.sh" "$MAJOR" valgrind) ||
    { echo "not ok 1 - PostgreSQL $MAJOR (valgrind) built"; exit 1; }
PREFIX=$(dirname "$("$PG_CONFIG" --bindir)")
VERSION=$("$PG_CONFIG" --version)
command -v valgrind >/dev/null || {
    [ "$(id -u)" = 0 ] && apt-get install -y -qq valgrind >/dev/null
}

WORK=$(mktemp -d /tmp/fencing-valgrind.XXXXXX)
DATA=$WORK/data
VGLOG=$WORK/valgrind
SOCK=$WORK/sock
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
cleanup() {
    as_server_user "$PREFIX/bin/pg_ctl" -D "$DATA" -m fast -w -t 300 stop >/dev/null 2>&1
    [ -n "${FENCING_MATRIX_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/src" "$VGLOG" "$SOCK"
install_extension "$PG_CONFIG" "$WORK/src" || { echo "not ok 1 - the extension built"; exit 1; }
echo "ok 1 - the extension built and installed into $VERSION (USE_VALGRIND)"
[ "$(id -u)" = 0 ] && chown -R postgres: "$WORK"
as_server_user "$PREFIX/bin/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
cat >>"$DATA/postgresql.conf" <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$SOCK'
max_prepared_transactions = 10
shared_buffers = 64MB
CONF
# The postmaster and every child under memcheck, as PostgreSQL's own
# Valgrind runs do (no leak check: backends exit without freeing).
as_server_user valgrind --quiet --trace-children=yes --track-origins=yes \
    --leak-check=no --read-var-info=yes --num-callers=40 \
    --suppressions="$PREFIX/valgrind.supp" \
    --error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END \
    --log-file="$VGLOG/%p.log" \
    "$PREFIX/bin/postgres" -D "$DATA" >"$WORK/server.log" 2>&1 &
for _ in $(seq 1 300); do
    "$PREFIX/bin/pg_isready" -q -h "$SOCK" -p "$PORT" && break
    sleep 1
done
start=$(date +%s)
cd "$WORK/src" || exit 1
PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres make -s PG_CONFIG="$PG_CONFIG" installcheck TAP_TESTS= \
    EXTRA_REGRESS_OPTS="--max-connections=2" >regress.log 2>&1
regress_rc=$?
elapsed=$(($(date +%s) - start))
tests=$(grep -cE '^(ok|not ok) |\.\.\. (ok|FAILED)' regress.log)
failures=$(grep -cE '^not ok |\.\.\. FAILED' regress.log)
echo "# $tests test files in ${elapsed}s under memcheck, $failures failed"
n=2
if [ "$regress_rc" -eq 0 ]; then
    echo "ok $n - pg_regress and isolation pass under memcheck ($tests files)"
else
    echo "not ok $n - pg_regress and isolation pass under memcheck ($failures of $tests failed)"
    grep -E '^not ok |FAILED' regress.log | sed 's/^/# /'
fi
as_server_user "$PREFIX/bin/pg_ctl" -D "$DATA" -m fast -w -t 300 stop >/dev/null 2>&1
# Each error is one VALGRINDERROR-BEGIN ... END block; it is ours when a
# frame of its stack is in fencing.so.
total=0 ours=0
for f in "$VGLOG"/*.log; do
    [ -f "$f" ] || continue
    t=$(grep -c 'VALGRINDERROR-BEGIN' "$f")
    o=$(awk '/VALGRINDERROR-BEGIN/{b="";inb=1} inb{b=b"\n"$0} /VALGRINDERROR-END/{if (b ~ /fencing\.so/) c++; inb=0} END{print c+0}' "$f")
    total=$((total + t))
    ours=$((ours + o))
done
echo "# memcheck errors: $total in all, $ours with a frame in fencing.so ($(ls "$VGLOG" | wc -l) processes traced)"
n=$((n + 1))
if [ "$ours" -eq 0 ]; then
    echo "ok $n - no memcheck error in a frame of the extension"
else
    echo "not ok $n - $ours memcheck errors in frames of the extension"
    for f in "$VGLOG"/*.log; do
        awk '/VALGRINDERROR-BEGIN/{b="";inb=1} inb{b=b"\n"$0} /VALGRINDERROR-END/{if (b ~ /fencing\.so/) print b; inb=0}' "$f"
    done | head -120 | sed 's/^/# /'
fi
[ "$regress_rc" -eq 0 ] && [ "$ours" -eq 0 ]
