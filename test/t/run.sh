#!/usr/bin/env bash
# Runs the TAP suites (test/t/*.pl, PostgreSQL::Test::Cluster) with prove.
#
#   test/t/run.sh                      every test/t/[0-9]*.pl, verbose ("ok N - ..." lines)
#   test/t/run.sh test/t/010_crash.pl  one of them
#   test/t/run.sh -I DIR ... FILES     prove options and files as given (this is
#                                      how `make installcheck` calls it, as PROVE,
#                                      with TESTDIR set to the top directory)
# Each run first builds and installs test/modules/* into the server under test.
#
# The framework needs initdb/postgres/pg_ctl of the pg_config on PATH first on
# PATH, PG_REGRESS (Cluster.pm's init runs `pg_regress --config-auth`), and a
# TESTDIR whose tmp_check/ holds logs and data directories (default
# build/tap). PostgreSQL refuses to run as root, so under root (CI) prove runs
# as the "postgres" user, on a copy of test/t, fencing.control and the SQL
# scripts in a directory of its own under /tmp (the checkout may not be
# readable by postgres); the logs are copied back to TESTDIR/tmp_check/log.
#   FENCING_TAP_CRASH_CYCLES   kill -9 cycles of 010_crash.pl (default 20)
#   FENCING_UPGRADE_FROM       040_pg_upgrade.pl: the old cluster's install prefix
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
BINDIR=$("$PG_CONFIG" --bindir)
PGXS_DIR=$(dirname "$("$PG_CONFIG" --pgxs)")/../..
PERL_LIB=$PGXS_DIR/src/test/perl
export PATH="$BINDIR:$PATH"
export PG_REGRESS=${PG_REGRESS:-$PGXS_DIR/src/test/regress/pg_regress}
export TESTDIR=${TESTDIR:-$ROOT/build/tap}
# Where the framework puts data directories and logs: 15's derives both from
# TESTDIR, 16+'s reads these two (else paths relative to the working
# directory); set both so every version logs to TESTDIR/tmp_check/log.
export TESTDATADIR=$TESTDIR/tmp_check TESTLOGDIR=$TESTDIR/tmp_check/log
# The test files find the repository (fencing.control, sql/) here.
export FENCING_ROOT=$ROOT
cd "$ROOT"
# The test-only server modules some TAP files load (test/modules/*, e.g.
# takeover_worker for 084): built in a scratch copy (the checkout may be
# read-only, and another server's objects must not be reused) and installed
# into the server under test, as the extension itself is.
for mod in test/modules/*/; do
    [ -f "$mod/Makefile" ] || continue
    build=$(mktemp -d /tmp/fencing-module.XXXXXX)
    cp -a "$mod." "$build/"
    if ! make -s -C "$build" PG_CONFIG="$PG_CONFIG" install >"$build/build.log" 2>&1; then
        echo "# test/t/run.sh: could not build and install $mod against $PG_CONFIG:"
        sed 's/^/# /' "$build/build.log"
        rm -rf "$build"
        exit 1
    fi
    rm -rf "$build"
done

# A fresh tmp_check (data directories of a previous run would be in the way).
rm -rf "$TESTDIR/tmp_check"
mkdir -p "$TESTDIR/tmp_check"

args=("$@")
if [ ${#args[@]} -eq 0 ]; then
    args=(-v --timer -I "$PERL_LIB" -I test/t test/t/[0-9]*.pl)
elif ! printf '%s\n' "${args[@]}" | grep -q '^-'; then
    args=(-v --timer -I "$PERL_LIB" -I test/t "${args[@]}")
else
    args=(-I "$PERL_LIB" -I test/t "${args[@]}")
fi

if [ "$(id -u)" != 0 ]; then
    exec /usr/bin/prove "${args[@]}"
fi

STAGE=$(mktemp -d /tmp/fencing-tap.XXXXXX)
mkdir -p "$STAGE/test" "$STAGE/sql"
cp -a test/t test/monitoring "$STAGE/test/"
cp -a monitoring "$STAGE/"
cp fencing.control "$STAGE/"
cp sql/fencing--*.sql "$STAGE/sql/"
mkdir -p "$STAGE/tmp_check"
chown -R postgres: "$STAGE"
chmod 755 "$STAGE"
runuser -u postgres -- env -C "$STAGE" PATH="$PATH" PG_REGRESS="$PG_REGRESS" TESTDIR="$STAGE" \
    TESTDATADIR="$STAGE/tmp_check" TESTLOGDIR="$STAGE/tmp_check/log" \
    FENCING_ROOT="$STAGE" PG_CONFIG="$PG_CONFIG" ${PG_TEST_NOCLEAN:+PG_TEST_NOCLEAN=1} \
    ${FENCING_TAP_CRASH_CYCLES:+FENCING_TAP_CRASH_CYCLES=$FENCING_TAP_CRASH_CYCLES} \
    ${FENCING_UPGRADE_FROM:+FENCING_UPGRADE_FROM=$FENCING_UPGRADE_FROM} \
    /usr/bin/prove "${args[@]}"
rc=$?
cp -a "$STAGE/tmp_check/log" "$TESTDIR/tmp_check/" 2>/dev/null
rm -rf "$STAGE"
exit $rc
