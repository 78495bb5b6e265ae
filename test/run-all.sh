#!/usr/bin/env bash
# Runs every suite and ends with one line: "N passed, N failed".
#
#   meta       META.json against the PGXN spec; one version in control, META.json,
#              debian/changelog and README (test/meta/check.py)
#   deb        the Debian package: build, apt-get install, CREATE EXTENSION and a
#              smoke test, dpkg -r (test/deb/run.sh; runs before build's make
#              install, and puts back any make-installed files it moved aside)
#   build      the extension with -Wall -Wextra -Werror, installed
#   unit       GoogleTest: the server-free core
#   fuzz       libFuzzer: the token parser, bounded run
#   regress    make installcheck on a scratch cluster: pg_regress and isolation specs
#   docs       docs/reference.md names every function, view and setting of the
#              installed extension (test/docs/run.sh)
#   cookbook   every docs/cookbook.md pattern, run (test/cookbook/run.sh)
#   monitoring monitoring/postgres_exporter.yml (YAML) and fencing_alerts.sql run (test/monitoring/)
#   security   CREATE EXTENSION / ALTER EXTENSION UPDATE next to trojan objects in
#              public and pg_temp; SECURITY DEFINER audit (test/security/run.sh)
#   sqlsmith   random SQL from Debian's sqlsmith, bounded, 0 server crashes (test/sqlsmith/run.sh)
#   patroni    Patroni (etcd3 DCS) with synchronous_mode_strict: switchover and kill -9
#              of the primary under writing and leasing clients (test/patroni/run.sh)
#   integration GoogleTest + libpq against the same scratch cluster
#   drivers    psycopg 3 binding tokens as smallint, integer, bigint, numeric
#   keymove    key-move stress (Python, psycopg) against the same scratch cluster
#   stress     10k fenced writes from 8 paused (SIGSTOP) processes in every scope,
#              with leases (test/stress/run.sh; STRESS_WRITES=100000: make stress)
#   memory     a backend's RSS stays flat over 50k fenced_update() calls and 50k
#              transparent-mode transactions (test/bench/memory.sh)
#   e2e-etcd   the pause story with real etcd locks and SIGSTOP (test/e2e/etcd.py)
#   e2e-zookeeper  the same with real ZooKeeper locks, and an epoch change (test/e2e/zookeeper.py)
#   tap        PostgreSQL::Test::Cluster suites (test/t/run.sh, prove -v): kill -9
#              loop, synchronous and asynchronous failover, pg_dump/pg_restore,
#              pg_upgrade, ALTER EXTENSION UPDATE along every update script, the
#              statistics counters with fencing preloaded
#   pooler     Debian's PgBouncer in transaction, statement and session pooling, one
#              server connection shared by several clients: no token crosses clients,
#              stale holders refused (test/pooler/run.sh)
#   repack     pg_repack (-t, -d, -x, -i), VACUUM FULL, CLUSTER of the extension's and
#              protected tables under raisers, commit order recorded (test/repack/run.sh)
#   partman    pg_partman create_parent, run_maintenance and retention on fenced tables
#              (test/partman/run.sh)
#   encodings  CREATE EXTENSION and every update path in every server encoding
#              (test/encodings/run.sh)
#   examples   the client examples (examples/run.sh): psql, Python, C++, Node.js,
#              Java, Django, SQLAlchemy against the same scratch cluster
#
# Each test case counts once: a pg_regress or isolation test file, a GoogleTest
# TEST, a fuzz run.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
LOGDIR=$ROOT/build/test-logs
mkdir -p "$LOGDIR"

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

passed=0
failed=0
failures=()

record() {  # record SUITE PASSED FAILED
    passed=$((passed + $2))
    failed=$((failed + $3))
    [ "$3" -gt 0 ] && failures+=("$1")
    echo "== $1: $2 passed, $3 failed"
}

# Suites that run their own clusters and print "ok N - ..." lines.
run_tap_like() {  # run_tap_like NAME SCRIPT
    timeout 600 bash "$2" >"$LOGDIR/$1.log" 2>&1
    local rc=$? ok bad
    ok=$(grep -c '^ok ' "$LOGDIR/$1.log")
    bad=$(grep -c '^not ok ' "$LOGDIR/$1.log")
    if [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    [ "$bad" -gt 0 ] && cat "$LOGDIR/$1.log"
    record "$1" "$ok" "$bad"
}
count_gtest() {  # count_gtest SUITE LOGFILE EXIT
    local ok bad
    ok=$(grep -c '^\[       OK \]' "$2")
    bad=$(grep -oE '^\[  FAILED  \] [A-Za-z0-9_/]+\.[A-Za-z0-9_/]+' "$2" | sort -u | wc -l)
    # A crash before the summary still counts as a failure.
    if [ "$3" -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    record "$1" "$ok" "$bad"
}

echo "== meta"
run_tap_like meta test/meta/run.sh
echo "== deb"
run_tap_like deb test/deb/run.sh

echo "== build"
if make -s clean >/dev/null && make -s WERROR=-Werror >"$LOGDIR/build.log" 2>&1 &&
    $SUDO make -s install >>"$LOGDIR/build.log" 2>&1; then
    record build 1 0
else
    cat "$LOGDIR/build.log"
    record build 0 1
    echo "$passed passed, $failed failed"
    exit 1
fi

echo "== unit"
make -s -C test/unit check >"$LOGDIR/unit.log" 2>&1
count_gtest unit "$LOGDIR/unit.log" $?

echo "== fuzz"
if make -s -C test/fuzz run FUZZ_SECONDS="${FUZZ_SECONDS:-30}" >"$LOGDIR/fuzz.log" 2>&1; then
    record fuzz 1 0
else
    tail -40 "$LOGDIR/fuzz.log"
    record fuzz 0 1
fi

echo "== scratch cluster"
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"

echo "== installcheck"
# TAP_TESTS= : the TAP suites run once, as suite "tap" below.
make -s installcheck TAP_TESTS= >"$LOGDIR/installcheck.log" 2>&1
rc=$?
ok=$(grep -cE '^(test| ) *[A-Za-z0-9_-]+ +\.\.\. ok' "$LOGDIR/installcheck.log")
bad=$(grep -cE '\.\.\. FAILED' "$LOGDIR/installcheck.log")
if [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
[ "$bad" -gt 0 ] && { cat "$LOGDIR/installcheck.log"; cat regression.diffs output_iso/regression.diffs 2>/dev/null | head -200; }
record installcheck "$ok" "$bad"

echo "== docs"
run_tap_like docs test/docs/run.sh
echo "== cookbook"
run_tap_like cookbook test/cookbook/run.sh

echo "== security"
run_tap_like security test/security/run.sh

echo "== monitoring"
run_tap_like monitoring test/monitoring/run.sh

if [ -d test/integration ]; then
    echo "== integration"
    make -s -C test/integration check >"$LOGDIR/integration.log" 2>&1
    rc=$?
    [ $rc -ne 0 ] && tail -60 "$LOGDIR/integration.log"
    count_gtest integration "$LOGDIR/integration.log" $rc
fi

echo "== drivers"
run_tap_like drivers test/drivers/run.sh
echo "== keymove"
run_tap_like keymove test/keymove/run.sh
echo "== starvation"
run_tap_like starvation test/starvation/run.sh
echo "== stress"
STRESS_WRITES=${STRESS_WRITES:-10000} run_tap_like stress test/stress/run.sh
echo "== memory"
# Backend RSS flat over 50k fenced_update() calls and 50k transparent-mode
# transactions (make bench runs the 1M version).
CALLS=50000 run_tap_like memory test/bench/memory.sh
echo "== e2e-etcd"
run_tap_like e2e-etcd test/e2e/etcd.sh
echo "== e2e-zookeeper"
run_tap_like e2e-zookeeper test/e2e/zookeeper.sh
echo "== pooler"
run_tap_like pooler test/pooler/run.sh
echo "== repack"
run_tap_like repack test/repack/run.sh
echo "== partman"
run_tap_like partman test/partman/run.sh
echo "== encodings"
run_tap_like encodings test/encodings/run.sh
echo "== examples"
run_tap_like examples examples/run.sh

echo "== sqlsmith"
run_tap_like sqlsmith test/sqlsmith/run.sh

echo "== tap"
# Every "ok N" / "not ok N" line of prove -v counts once; a test file that dies
# before its plan counts as one failure more.
timeout 1500 bash test/t/run.sh >"$LOGDIR/tap.log" 2>&1
rc=$?
ok=$(grep -cE '^ok [0-9]+' "$LOGDIR/tap.log")
bad=$(grep -cE '^not ok [0-9]+' "$LOGDIR/tap.log")
if [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
[ "$bad" -gt 0 ] && cat "$LOGDIR/tap.log"
record tap "$ok" "$bad"

echo "== patroni"
run_tap_like patroni test/patroni/run.sh

[ ${#failures[@]} -gt 0 ] && echo "failed suites: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
