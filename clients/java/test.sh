#!/usr/bin/env bash
# The Java client's suite: builds the jar and the test harness with Maven offline (build.sh),
# starts a scratch cluster with the extension (test/cluster.sh on a private port and socket
# directory; the extension must be installed: make install), and runs the harness, which
# prints TAP lines ("ok N - ...", "not ok N - ..."), on the extension at its default
# version and at 1.4.
#   bash clients/java/test.sh           (FENCING_JAVA_PGPORT: the cluster's port, 54346)
# With FENCING_JAVA_USE_RUNNING=1 it uses the running server of the libpq environment
# (PGHOST/PGPORT, reachable over TCP on 127.0.0.1) instead of starting one;
# FENCING_JAVA_ONLY="heartbeat,pause" runs only those groups ("pooler": the PgBouncer part).
# Then, on the cluster restarted with the library preloaded, the lease path behind PgBouncer
# 1.18 and 1.24 (PoolerMain; FENCING_JAVA_PGBOUNCER_PORT, default the cluster's port + 1, and
# the next port).
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
ROOT=$(cd ../.. && pwd)
# FENCING_JAVA_PGJDBC: run on another pgjdbc jar than Debian 12's (compiled against that one
# still): Debian 13's 42.7 from test/lib/trixie-pgjdbc.sh in suite client-java-trixie.
PGJDBC=${FENCING_JAVA_PGJDBC:-/usr/share/java/postgresql.jar}
BUILD=$HERE/build
DB=fencing_client_java

JAR=$(bash build.sh "$BUILD" | tail -1)
# No Class-Path in the jar's manifest: a user's build tool supplies pgjdbc.
# (grep reads everything: with -q and pipefail, unzip's SIGPIPE would decide the result.)
[ "$(unzip -p "$JAR" META-INF/MANIFEST.MF | grep -c '^Class-Path')" = 0 ] || { echo "not ok - the jar's manifest has a Class-Path"; exit 1; }
unzip -l "$JAR" META-INF/LICENSE >/dev/null || { echo "not ok - the jar has no META-INF/LICENSE"; exit 1; }
# The README's example, as written: its ```java block after "## Use" is the program the
# harness's "example" group runs.
rm -rf "$BUILD/example-classes" "$BUILD/readme" && mkdir -p "$BUILD/readme"
awk '/^## Use/ { on = 1 } on && /^```java/ { grab = 1; next } grab && /^```/ { exit } grab' README.md >"$BUILD/readme/LeaseExample.java"
javac -Xlint:all -Werror -d "$BUILD/example-classes" -cp "$JAR:$PGJDBC" "$BUILD/readme/LeaseExample.java"

if [ "${FENCING_JAVA_USE_RUNNING:-}" != 1 ]; then
    export FENCING_PGPORT=${FENCING_JAVA_PGPORT:-54346}
    export FENCING_CLUSTER_DIR=/tmp/fencing-client-java-$FENCING_PGPORT
    "$ROOT/test/cluster.sh" stop
    trap '"$ROOT/test/cluster.sh" stop' EXIT
    "$ROOT/test/cluster.sh" start
    eval "$("$ROOT/test/cluster.sh" env)"
fi
# Two databases: the extension at its default version, and at 1.4, as after a package
# upgrade before ALTER EXTENSION fencing UPDATE (1.5's functions missing).
URLS=()
for v in default 1.4; do
    db=$DB${v/./}
    [ "$v" = default ] && db=$DB
    psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    if [ "$v" = default ]; then
        psql -X -q -d "$db" -c "CREATE EXTENSION fencing"
    else
        psql -X -q -d "$db" -c "CREATE EXTENSION fencing VERSION '$v'"
    fi
    URLS+=("jdbc:postgresql://127.0.0.1:${PGPORT}/$db")
done
CP="$JAR:$BUILD/test-classes:$PGJDBC"
status=0
if [ -n "${FENCING_JAVA_PGJDBC:-}" ]; then
    echo "# pgjdbc: $PGJDBC"
fi
java -Dpguser="${PGUSER:-postgres}" -Donly="${FENCING_JAVA_ONLY:-}" -cp "$CP" io.github.pgfencing.jdbc.test.TestMain \
    "$CP" "$JAR:$BUILD/example-classes:$PGJDBC" "${URLS[@]}" | tee "$BUILD/main.out" || status=1
[ "${FENCING_JAVA_USE_RUNNING:-}" != 1 ] || exit $status
[ -z "${FENCING_JAVA_ONLY:-}" ] || [[ ",$FENCING_JAVA_ONLY," == *,pooler,* ]] || exit $status

# Behind Debian 12's PgBouncer 1.18 (the host's) and, as root, Debian 13's 1.24 from the
# trixie chroot (test/lib/pgbouncer124.sh), transaction pooling, 2 server connections, the
# library preloaded (a takeover is TF003): PoolerMain. The application's connection keeps
# pgjdbc's default prepareThreshold (5) behind 1.24 (max_prepared_statements = 200), and
# sets prepareThreshold=0 behind 1.18, as docs/poolers.md says.
n=$(grep -cE '^(not )?ok ' "$BUILD/main.out" || true)
tap() {  # tap DESCRIPTION OK: one TAP line numbered on
    n=$((n + 1))
    if [ "$2" = 0 ]; then echo "ok $n - $1"; else echo "not ok $n - $1"; status=1; fi
}
psql -X -q -c "ALTER SYSTEM SET shared_preload_libraries = 'fencing'"
if [ "$(id -u)" = 0 ]; then PG_RUN="runuser -u postgres --"; else PG_RUN=; fi
$PG_RUN "$(pg_config --bindir)/pg_ctl" -D "$FENCING_CLUSTER_DIR/data" -l "$FENCING_CLUSTER_DIR/server.log" -w restart >/dev/null
tap "the cluster restarted with shared_preload_libraries = fencing" \
    "$([ "$(psql -qAtX -c 'SHOW shared_preload_libraries')" = fencing ]; echo $?)"
pooler() {  # pooler LABEL PORT APP_PREPARE_THRESHOLD
    java -Dpguser=postgres -Doffset="$n" -cp "$CP" io.github.pgfencing.jdbc.test.PoolerMain \
        "jdbc:postgresql://127.0.0.1:$2/pgb_lib" "jdbc:postgresql://127.0.0.1:${PGPORT}/$DB" "$1" "$3" |
        tee "$BUILD/pooler-$2.out" || status=1
    n=$((n + $(grep -cE '^(not )?ok ' "$BUILD/pooler-$2.out" || true)))
}
# Outside the checkout: the poolers run as postgres, which may not reach it.
PGB=$(mktemp -d /tmp/pgfencing-java-pgbouncer.XXXXXX)
PGB_PORT=${FENCING_JAVA_PGBOUNCER_PORT:-$((FENCING_PGPORT + 1))}
export PGBOUNCER124_DATABASES="pgb_lib:$DB"
trap '"$ROOT/test/lib/pgbouncer124.sh" stop "$PGB"; "$ROOT/test/lib/pgbouncer124.sh" stop "$PGB"124; rm -rf "$PGB" "$PGB"124; "$ROOT/test/cluster.sh" stop' EXIT
if "$ROOT/test/lib/pgbouncer124.sh" start-host "$PGB" "$PGB_PORT" "$FENCING_PGPORT" transaction 2; then
    pooler "pgbouncer $(pgbouncer --version | head -1 | cut -d' ' -f2)" "$PGB_PORT" 0
else
    tap "PgBouncer 1.18 starts" 1
fi
"$ROOT/test/lib/pgbouncer124.sh" stop "$PGB"
if "$ROOT/test/lib/pgbouncer124.sh" available; then
    if "$ROOT/test/lib/pgbouncer124.sh" start "$PGB"124 $((PGB_PORT + 1)) "$FENCING_PGPORT" transaction 2; then
        pooler "pgbouncer 1.24${PGBOUNCER124_MAX_PREPARED:+ max_prepared_statements=$PGBOUNCER124_MAX_PREPARED}" \
            $((PGB_PORT + 1)) default
    else
        tap "PgBouncer 1.24 starts" 1
    fi
    "$ROOT/test/lib/pgbouncer124.sh" stop "$PGB"124
fi
exit $status
