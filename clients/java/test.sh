#!/usr/bin/env bash
# The Java client's suite: builds the jar and the test harness with Maven offline (build.sh),
# starts a scratch cluster with the extension (test/cluster.sh on a private port and socket
# directory; the extension must be installed: make install), and runs the harness, which
# prints TAP lines ("ok N - ...", "not ok N - ..."), on the extension at its default
# version and at 1.4.
#   bash clients/java/test.sh           (FENCING_JAVA_PGPORT: the cluster's port, 54346)
# With FENCING_JAVA_USE_RUNNING=1 it uses the running server of the libpq environment
# (PGHOST/PGPORT, reachable over TCP on 127.0.0.1) instead of starting one;
# FENCING_JAVA_ONLY="heartbeat,pause" runs only those groups.
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
ROOT=$(cd ../.. && pwd)
PGJDBC=/usr/share/java/postgresql.jar
BUILD=$HERE/build
DB=fencing_client_java

JAR=$(bash build.sh "$BUILD" | tail -1)
# No Class-Path in the jar's manifest: a user's build tool supplies pgjdbc.
! unzip -p "$JAR" META-INF/MANIFEST.MF | grep -q '^Class-Path' || { echo "not ok - the jar's manifest has a Class-Path"; exit 1; }
unzip -l "$JAR" META-INF/LICENSE | grep -q META-INF/LICENSE || { echo "not ok - the jar has no META-INF/LICENSE"; exit 1; }
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
java -Dpguser="${PGUSER:-postgres}" -Donly="${FENCING_JAVA_ONLY:-}" -cp "$CP" io.github.pgfencing.jdbc.test.TestMain \
    "$CP" "$JAR:$BUILD/example-classes:$PGJDBC" "${URLS[@]}"
