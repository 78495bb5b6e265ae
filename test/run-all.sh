#!/usr/bin/env bash
# Runs the suites and ends with one line: "N passed, N failed".
#
#   bash test/run-all.sh                  every suite, in the order below
#   bash test/run-all.sh regress tap      only these (also SUITES="regress tap"
#   make test SUITES=regress,tap          or comma separated), plus their set-up:
#                                         the build, the shared scratch cluster
#   bash test/run-all.sh --list [NAMES]   the suites such a run takes; runs none
#
# An unknown suite name is an error that lists the valid ones. test/README.md
# maps every suite, what it needs and how long it takes.
#
#   meta       META.json against the PGXN spec; one version in control, META.json,
#              debian/changelog and README (test/meta/check.py); the include
#              layering of src/ (test/meta/layers.py)
#   deb        the Debian package: build, apt-get install, CREATE EXTENSION and a
#              smoke test, dpkg -r (test/deb/run.sh; runs before build's make
#              install, and puts back any make-installed files it moved aside)
#   build      the extension with -Wall -Wextra -Werror, installed
#   unit       GoogleTest: the server-free core
#   fuzz       libFuzzer: the token parser, bounded run
#   regress    make installcheck on a scratch cluster: pg_regress and isolation specs
#              (alias: installcheck)
#   docs       docs/reference.md names every function, view and setting of the
#              installed extension (test/docs/run.sh)
#   cookbook   every docs/cookbook.md pattern, run (test/cookbook/run.sh)
#   monitoring monitoring/postgres_exporter.yml (YAML) and fencing_alerts.sql run (test/monitoring/)
#   security   CREATE EXTENSION / ALTER EXTENSION UPDATE next to trojan objects in
#              public and pg_temp; SECURITY DEFINER audit (test/security/run.sh)
#   client-go  the Go client library (clients/go/test.sh): Go 1.26 and pgx v5 from
#              Debian sid's packages (deps.sh), the README example as a module that
#              requires it, go vet, go test -race against its own scratch cluster:
#              leases, the lease contract, a SIGSTOP pause past the TTL, typed errors,
#              token carriage, max token in binary and text
#   sqlsmith   random SQL from Debian's sqlsmith, bounded, 0 server crashes (test/sqlsmith/run.sh)
#   patroni    Patroni (etcd3 DCS) with synchronous_mode_strict: switchover and kill -9
#              of the primary under writing and leasing clients (test/patroni/run.sh)
#   integration GoogleTest + libpq against the same scratch cluster
#   drivers    psycopg 3 binding tokens as smallint, integer, bigint, numeric
#              and ActiveRecord saves (lock_version, partial_writes, attr_readonly)
#   races      races forced with gdb where no isolation spec reaches: a key's first write
#              racing the retirement of its entry (test/races/run.sh)
#   keymove    key-move stress (Python, psycopg) against the same scratch cluster
#   starvation a raise gets through 8 pgbench writers at the HWM (test/starvation/run.sh)
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
#              stale holders refused; pipelines and batches of psycopg, pgx, pgjdbc
#              and node-postgres (test/pooler/run.sh)
#   repack     pg_repack (-t, -d, -x, -i), VACUUM FULL, CLUSTER of the extension's and
#              protected tables under raisers, commit order recorded (test/repack/run.sh)
#   partman    pg_partman create_parent, run_maintenance and retention on fenced tables
#              (test/partman/run.sh)
#   migrations Django, Alembic and ActiveRecord migrations, the in-place expand/contract
#              set and the shadow-table swap, under fenced writers with the commit
#              order recorded (test/migrations/run.sh)
#   restore    a pg_dump / pg_restore matrix of fenced tables: full, -j 4, schema then
#              data, pg_dumpall, -t, -n, -N fencing, --section, partitions, another
#              extension version (test/restore/run.sh)
#   encodings  CREATE EXTENSION and every update path in every server encoding
#              (test/encodings/run.sh)
#   examples   the client examples (examples/run.sh): psql, Python, C++, Node.js,
#              Java, Django, SQLAlchemy against the same scratch cluster
#   client-java the JDBC client library (clients/java/test.sh): jar built with Maven
#              offline from Debian's repository, a plain-Java TAP harness on its own
#              scratch cluster: lease, the lease contract, heartbeat, a SIGSTOPped holder
#              JVM, typed errors, autocommit, max token, binary transfer, the README
#   client-node  the Node.js client library pg-fencing (clients/node/test.sh): leases,
#              heartbeat, a holder paused with SIGSTOP, token carriage, typed errors,
#              the largest token, npm pack; its own scratch cluster
#   client-python  the Python client library (clients/python/test.sh): wheel and
#              sdist built offline and installed into venvs; leases, heartbeat, a
#              SIGSTOP past the TTL, token carriage, codecs, for psycopg 3 (sync and
#              async) and asyncpg, on its own scratch cluster
#   client-python-trixie  the Python client's tests (clients/python/test-trixie.sh) on
#              Debian 13's drivers in the trixie chroot: psycopg 3.2, psycopg_pool,
#              asyncpg, SQLAlchemy, psycopg2 (root); own cluster on 55436
#   client-java-trixie  the Java suite (clients/java/test.sh) run on Debian 13's pgjdbc
#              42.7 (test/lib/trixie-pgjdbc.sh, root); own cluster on 54350
#   client-node-current  the Node suite (clients/node/test.sh) on npm's newest
#              node-postgres 8.x (CLIENT_NODE_PG=8); own cluster on 55442
#   conformance  one contract, one suite (clients/CONTRACT.md, clients/conformance/):
#              the same ten cases with the same timings against every library's
#              agent (waited acquire, SIGSTOP past the TTL, refused renewal, the
#              check before COMMIT, close during a renewal, release of a lost
#              lease, stale fenced_*, fast/immediate/kill -9 restarts): the lost
#              signal never early, never late; a table per library; own cluster
#   pg15-assert, pg18-assert
#              PostgreSQL 15 and 18 built from Debian's source with --enable-cassert
#              (test/pg/build-server.sh, cached): the extension with -Werror,
#              pg_regress, isolation, every TAP suite, no assertion failure in any
#              server log (test/matrix/run.sh)
#   pg17, pg19 Debian's own binary packages of PostgreSQL 17 (Debian 13, trixie) and
#              19 (experimental, in a sid chroot), in a cached chroot
#              (test/matrix/chroot.sh): the extension with -Werror, pg_regress,
#              isolation, every TAP suite, the crash scan of every server log; on
#              19 also test/pg19's write paths (test/matrix/debian.sh)
#   upgrade-18-19  pg_upgrade from Debian's 18 to Debian's 19 in the sid chroot, with
#              state in every scope (test/t/040_pg_upgrade.pl, test/matrix/upgrade-18-19.sh)
#   extension-path  the extension in a directory of its own outside the server's tree,
#              loaded with extension_control_path and dynamic_library_path, on 18 and
#              19 in the sid chroot (test/matrix/extension-path.sh)
#   deb-chroots  the Debian package built with pg_buildext for 17 (trixie chroot), 18
#              and 19 (sid chroot), installed with apt-get, a stale write refused,
#              removed with dpkg -r (test/deb/chroot.sh)
#   upgrade-15-18  pg_upgrade from the source-built 15 to 18 with state in every
#              scope (test/t/040_pg_upgrade.pl across versions, test/matrix/upgrade.sh)
#
# Each test case counts once: a pg_regress or isolation test file, a GoogleTest
# TEST, a fuzz run, an "ok N" line. A suite that executes no check (0 passed,
# 0 failed) counts as a failure: a suite that silently ran nothing proves
# nothing.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
LOGDIR=$ROOT/build/test-logs

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# Every suite, in the order a full run takes them.
ALL_SUITES=(meta deb build unit fuzz regress docs cookbook security monitoring integration
    drivers keymove starvation stress memory e2e-etcd e2e-zookeeper pooler repack partman
    migrations restore encodings examples races client-java client-go client-node client-python
    client-python-trixie client-java-trixie client-node-current conformance sqlsmith tap patroni pg15-assert pg18-assert upgrade-15-18
    pg17 pg19 upgrade-18-19 extension-path deb-chroots)
# Suites run only when named (make test SUITES="..."): none at present.
BY_NAME_ONLY=()
# Suites that need nothing built or installed here (unit and fuzz build their own
# binaries; deb builds its package from a clean copy).
STANDALONE=(meta deb unit fuzz pg15-assert pg18-assert upgrade-15-18 pg17 pg19 upgrade-18-19 extension-path
    deb-chroots)
# Suites that run against the shared scratch cluster (the others start their own).
ON_SHARED_CLUSTER=(regress security monitoring integration drivers races keymove starvation
    stress memory e2e-etcd e2e-zookeeper examples)
one_of() {  # one_of NAME LIST...: NAME is one of LIST
    local name=$1 x
    shift
    for x in "$@"; do [ "$x" = "$name" ] && return 0; done
    return 1
}

# ---------------------------------------------------------------- which suites
# Arguments, else $SUITES; names separated by spaces or commas; none = all.
# --list prints the suites a run would take (set-up included) and exits.
list_only=
[ "${1:-}" = --list ] && { list_only=1; shift; }
requested=$(printf '%s ' "${@:-${SUITES:-}}" | tr ',' ' ')
selected=" "
unknown=()
for name in $requested; do
    [ "$name" = installcheck ] && name=regress
    if one_of "$name" "${ALL_SUITES[@]}"; then
        selected+="$name "
    else
        unknown+=("$name")
    fi
done
if [ ${#unknown[@]} -gt 0 ]; then
    echo "run-all.sh: unknown suite: ${unknown[*]}" >&2
    echo "valid suites: ${ALL_SUITES[*]}" >&2
    exit 2
fi
if [ "$selected" = " " ]; then
    for name in "${ALL_SUITES[@]}"; do one_of "$name" "${BY_NAME_ONLY[@]}" || selected+="$name "; done
fi
# The set-up the selected suites need: the build before any that is not standalone.
for name in $selected; do
    one_of "$name" "${STANDALONE[@]}" || { selected+="build "; break; }
done
selected_p() { [[ "$selected" == *" $1 "* ]]; }
if [ -n "$list_only" ]; then
    run=()
    for name in "${ALL_SUITES[@]}"; do selected_p "$name" && run+=("$name"); done
    echo "suites: ${run[*]}"
    exit 0
fi

mkdir -p "$LOGDIR"
passed=0
failed=0
failures=()

record() {  # record SUITE PASSED FAILED
    passed=$((passed + $2))
    failed=$((failed + $3))
    if [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
        failed=$((failed + 1))
        failures+=("$1")
        echo "== $1: executed no check (0 passed, 0 failed), counted as 1 failed; log: $LOGDIR/$1.log"
        return
    fi
    [ "$3" -gt 0 ] && failures+=("$1")
    echo "== $1: $2 passed, $3 failed"
}

# Suites that print "ok N - ..." / "not ok N - ..." lines.
run_tap_like() {  # run_tap_like NAME SCRIPT [ARGS...]; SUITE_TIMEOUT seconds (600)
    timeout "${SUITE_TIMEOUT:-600}" bash "$2" "${@:3}" >"$LOGDIR/$1.log" 2>&1
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

# ---------------------------------------------------------------- the suites
suite_meta() { run_tap_like meta test/meta/run.sh; }
suite_deb() { run_tap_like deb test/deb/run.sh; }

suite_build() {
    if make -s clean >/dev/null && make -s WERROR=-Werror >"$LOGDIR/build.log" 2>&1 &&
        $SUDO make -s install >>"$LOGDIR/build.log" 2>&1; then
        record build 1 0
    else
        cat "$LOGDIR/build.log"
        record build 0 1
        echo "$passed passed, $failed failed"
        exit 1
    fi
}

suite_unit() {
    make -s -C test/unit check >"$LOGDIR/unit.log" 2>&1
    count_gtest unit "$LOGDIR/unit.log" $?
}

suite_fuzz() {
    if make -s -C test/fuzz run FUZZ_SECONDS="${FUZZ_SECONDS:-30}" >"$LOGDIR/fuzz.log" 2>&1; then
        record fuzz 1 0
    else
        tail -40 "$LOGDIR/fuzz.log"
        record fuzz 0 1
    fi
}

suite_regress() {
    # TAP_TESTS= : the TAP suites run once, as suite "tap".
    make -s installcheck TAP_TESTS= >"$LOGDIR/regress.log" 2>&1
    local rc=$? ok bad
    ok=$(grep -cE '^(test| ) *[A-Za-z0-9_-]+ +\.\.\. ok' "$LOGDIR/regress.log")
    bad=$(grep -cE '\.\.\. FAILED' "$LOGDIR/regress.log")
    if [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    [ "$bad" -gt 0 ] && { cat "$LOGDIR/regress.log"; cat regression.diffs output_iso/regression.diffs 2>/dev/null | head -200; }
    record regress "$ok" "$bad"
}

suite_docs() { run_tap_like docs test/docs/run.sh; }
suite_cookbook() { run_tap_like cookbook test/cookbook/run.sh; }
suite_security() { run_tap_like security test/security/run.sh; }
suite_monitoring() { run_tap_like monitoring test/monitoring/run.sh; }

suite_integration() {
    make -s -C test/integration check >"$LOGDIR/integration.log" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && tail -60 "$LOGDIR/integration.log"
    count_gtest integration "$LOGDIR/integration.log" $rc
}

suite_drivers() { run_tap_like drivers test/drivers/run.sh; }
suite_keymove() { run_tap_like keymove test/keymove/run.sh; }
suite_races() { run_tap_like races test/races/run.sh; }
suite_starvation() { run_tap_like starvation test/starvation/run.sh; }
suite_stress() { STRESS_WRITES=${STRESS_WRITES:-10000} run_tap_like stress test/stress/run.sh; }
# Backend RSS flat over 50k fenced_update() calls and 50k transparent-mode
# transactions (make bench runs the 1M version).
suite_memory() { CALLS=50000 run_tap_like memory test/bench/memory.sh; }
suite_e2e-etcd() { run_tap_like e2e-etcd test/e2e/etcd.sh; }
suite_e2e-zookeeper() { run_tap_like e2e-zookeeper test/e2e/zookeeper.sh; }
suite_pooler() { run_tap_like pooler test/pooler/run.sh; }
suite_repack() { run_tap_like repack test/repack/run.sh; }
suite_partman() { run_tap_like partman test/partman/run.sh; }
suite_migrations() { run_tap_like migrations test/migrations/run.sh; }
suite_restore() { run_tap_like restore test/restore/run.sh; }
suite_encodings() { run_tap_like encodings test/encodings/run.sh; }
suite_examples() { run_tap_like examples examples/run.sh; }
suite_client-java() { run_tap_like client-java clients/java/test.sh; }
suite_client-go() { run_tap_like client-go clients/go/test.sh; }
suite_client-node() { run_tap_like client-node clients/node/test.sh; }
suite_client-python() { run_tap_like client-python clients/python/test.sh; }
suite_client-python-trixie() { run_tap_like client-python-trixie clients/python/test-trixie.sh; }
suite_client-java-trixie() {
    local jar
    jar=$(bash test/lib/trixie-pgjdbc.sh) || { record client-java-trixie 0 1; return; }
    FENCING_JAVA_PGJDBC=$jar FENCING_JAVA_PGPORT=${FENCING_JAVA_TRIXIE_PGPORT:-54350} \
        run_tap_like client-java-trixie clients/java/test.sh
}
suite_client-node-current() {
    CLIENT_NODE_PG=8 CLIENT_NODE_PGPORT=${CLIENT_NODE_CURRENT_PGPORT:-55442} run_tap_like client-node-current clients/node/test.sh
}
suite_conformance() { SUITE_TIMEOUT=1500 run_tap_like conformance clients/conformance/run.sh; }
suite_sqlsmith() { run_tap_like sqlsmith test/sqlsmith/run.sh; }

suite_tap() {
    # Every "ok N" / "not ok N" line of prove -v counts once; a test file that
    # dies before its plan counts as one failure more.
    timeout 1500 bash test/t/run.sh >"$LOGDIR/tap.log" 2>&1
    local rc=$? ok bad
    ok=$(grep -cE '^ok [0-9]+' "$LOGDIR/tap.log")
    bad=$(grep -cE '^not ok [0-9]+' "$LOGDIR/tap.log")
    if [ $rc -ne 0 ] && [ "$bad" -eq 0 ]; then bad=1; fi
    [ "$bad" -gt 0 ] && cat "$LOGDIR/tap.log"
    record tap "$ok" "$bad"
}

suite_patroni() { run_tap_like patroni test/patroni/run.sh; }
# The version matrix: each builds its server from Debian's source on first use
# (cached in /var/cache/fencing-pg), hence the longer timeout.
suite_pg15-assert() { SUITE_TIMEOUT=1800 run_tap_like pg15-assert test/matrix/run.sh 15 assert; }
suite_pg18-assert() { SUITE_TIMEOUT=1800 run_tap_like pg18-assert test/matrix/run.sh 18 assert; }
# Debian's binary packages in a chroot, made on first use (cached in
# /var/cache/fencing-chroots).
suite_pg17() { SUITE_TIMEOUT=2400 run_tap_like pg17 test/matrix/debian.sh 17; }
suite_pg19() { SUITE_TIMEOUT=2400 run_tap_like pg19 test/matrix/debian.sh 19; }
suite_upgrade-18-19() { SUITE_TIMEOUT=1800 run_tap_like upgrade-18-19 test/matrix/upgrade-18-19.sh; }
suite_extension-path() { SUITE_TIMEOUT=1800 run_tap_like extension-path test/matrix/extension-path.sh; }
suite_deb-chroots() { SUITE_TIMEOUT=1200 run_tap_like deb-chroots test/deb/chroot.sh; }
suite_upgrade-15-18() { SUITE_TIMEOUT=1800 run_tap_like upgrade-15-18 test/matrix/upgrade.sh; }

# ---------------------------------------------------------------- the run
start_shared_cluster() {
    echo "== scratch cluster"
    test/cluster.sh stop
    trap 'test/cluster.sh stop' EXIT
    test/cluster.sh start || { record "scratch cluster" 0 1; echo "$passed passed, $failed failed"; exit 1; }
    eval "$(test/cluster.sh env)"
    cluster_started=1
}

cluster_started=
for name in "${ALL_SUITES[@]}"; do
    selected_p "$name" || continue
    if one_of "$name" "${ON_SHARED_CLUSTER[@]}" && [ -z "$cluster_started" ]; then
        start_shared_cluster
    fi
    echo "== $name"
    "suite_$name"
done

[ ${#failures[@]} -gt 0 ] && echo "failed suites: ${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
