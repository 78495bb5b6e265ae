#!/usr/bin/env bash
# TAP tests (PostgreSQL::Test::Cluster, run by prove): each test starts a
# cluster of its own with fencing in shared_preload_libraries. Needs the
# extension installed into the pg_config on PATH (make install). The clusters
# run as the "postgres" user when invoked as root (initdb refuses root); the
# framework finds initdb, pg_ctl and pgbench on PATH and pg_regress through
# PG_REGRESS. Its files (tmp_check: data directories, logs, port locks) go to
# a temporary directory, removed at the end. FENCING_TAP_PORT pins the port
# (else the framework picks a free one). Prints prove's verbose output: one
# "ok N - ..." / "not ok N - ..." line per check.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
PKGLIB=$(pg_config --pkglibdir)
BINDIR=$(pg_config --bindir)
PERL_LIB=$PKGLIB/pgxs/src/test/perl
[ -d "$PERL_LIB" ] || PERL_LIB=/usr/lib/postgresql/15/lib/pgxs/src/test/perl
PG_REGRESS=$PKGLIB/pgxs/src/test/regress/pg_regress
[ -x "$PG_REGRESS" ] || PG_REGRESS=/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress

WORK=$(mktemp -d /tmp/fencing-tap.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
as_server_user() {
    if [ "$(id -u)" = 0 ]; then
        chown -R postgres: "$WORK"
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}
# The server user may not be able to read the checkout (say, under /root):
# the tests and the files they read are copied into the temporary directory,
# and the tests find them through FENCING_ROOT. prove runs from there too
# (tmp_check lands there).
mkdir -p "$WORK/repo/test"
cp -r "$ROOT/monitoring" "$WORK/repo/"
cp -r "$ROOT/test/t" "$ROOT/test/monitoring" "$WORK/repo/test/"
cd "$WORK"
as_server_user env PATH="$BINDIR:$PATH" PG_REGRESS="$PG_REGRESS" TESTDIR="$WORK" \
    FENCING_ROOT="$WORK/repo" ${FENCING_TAP_PORT:+FENCING_TAP_PORT=$FENCING_TAP_PORT} \
    prove -v -I "$PERL_LIB" "$WORK"/repo/test/t/*.pl
rc=$?
if [ $rc -ne 0 ]; then
    for f in "$WORK"/tmp_check/log/*; do
        [ -f "$f" ] && { echo "=== $f"; tail -50 "$f"; }
    done
fi
exit $rc
