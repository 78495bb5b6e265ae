#!/usr/bin/env bash
# The pooler attack pass (test/pooler/attack124.py) on each client library, by
# hand, as root: one scratch cluster preloading the library
# (test/cluster.sh on ATTACK_PGPORT, default 55496), Debian 12's PgBouncer 1.18
# on the next port and Debian 13's 1.24 (test/lib/pgbouncer124.sh) on the one
# after, transaction pooling with 2 server connections for the 4 workers; then
# for each LIBRARY given (python, node, java, go; default all four) and each
# pooler, a run of SECONDS (ATTACK_SECONDS, default 40). Prints attack124.py's
# summary lines; exits 1 when any run counted a stale write accepted, a token
# issued twice, a false lost or session state left.
#   test/pooler/attack-libs.sh [python|node|java|go ...]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export FENCING_PGPORT=${ATTACK_PGPORT:-55496}
export FENCING_CLUSTER_DIR=/tmp/fencing-attack-$FENCING_PGPORT
SECONDS_EACH=${ATTACK_SECONDS:-40}
LIBS=("$@")
[ ${#LIBS[@]} -gt 0 ] || LIBS=(python node java go)
PGB=$FENCING_CLUSTER_DIR/pgbouncer
# After a failed server login (a restart) PgBouncer refuses every new server login for
# server_login_retry (default 15 s, far past the 2 s TTL): every lease would be lost then,
# truly, and its loss would look false to attack124.py's window. 1 s keeps the pooler's own
# outage inside that window (ATTACK_LOGIN_RETRY=15: PgBouncer's default).
export PGBOUNCER124_EXTRA="server_login_retry = ${ATTACK_LOGIN_RETRY:-1}"
stop_all() {
    "$ROOT/test/lib/pgbouncer124.sh" stop "$PGB"118
    "$ROOT/test/lib/pgbouncer124.sh" stop "$PGB"124
    "$ROOT/test/cluster.sh" stop
}
trap stop_all EXIT
"$ROOT/test/cluster.sh" stop >/dev/null 2>&1
"$ROOT/test/cluster.sh" start >/dev/null || exit 1
eval "$("$ROOT/test/cluster.sh" env)"
psql -qX -c "CREATE EXTENSION fencing" -c "ALTER SYSTEM SET shared_preload_libraries = 'fencing'" >/dev/null
runuser -u postgres -- "$(pg_config --bindir)/pg_ctl" -D "$FENCING_CLUSTER_DIR/data" -l "$FENCING_CLUSTER_DIR/server.log" -w restart >/dev/null
"$ROOT/test/lib/pgbouncer124.sh" start-host "$PGB"118 $((FENCING_PGPORT + 1)) "$FENCING_PGPORT" transaction "${ATTACK_POOL:-2}" || exit 1
"$ROOT/test/lib/pgbouncer124.sh" start "$PGB"124 $((FENCING_PGPORT + 2)) "$FENCING_PGPORT" transaction "${ATTACK_POOL:-2}" || exit 1
case " ${LIBS[*]} " in *" java "*)
    JAR=$(bash "$ROOT/clients/java/build.sh" "$ROOT/clients/java/build" | tail -1) || exit 1
    JAVA_WORKER="java -cp $JAR:$ROOT/clients/java/build/test-classes:${FENCING_JAVA_PGJDBC:-/usr/share/java/postgresql.jar} io.github.pgfencing.jdbc.test.AttackWorker"
    ;;
esac
case " ${LIBS[*]} " in *" go "*)
    (eval "$("$ROOT/clients/go/deps.sh")" && cd "$ROOT/clients/go" &&
        go build -o "$FENCING_CLUSTER_DIR/attackworker" ./internal/attackworker) || exit 1
    ;;
esac
status=0
for lib in "${LIBS[@]}"; do
    case $lib in
    python) worker= ;;
    node) worker="node $ROOT/clients/node/test/attack_worker.js" ;;
    java) worker=$JAVA_WORKER ;;
    go) worker=$FENCING_CLUSTER_DIR/attackworker ;;
    *) echo "unknown library $lib" >&2; exit 2 ;;
    esac
    for p in "118:$((FENCING_PGPORT + 1))" "124:$((FENCING_PGPORT + 2))"; do
        ATTACK_WORKER=$worker ATTACK_PGBOUNCER=${p%%:*} PYTHONPATH=$ROOT/clients/python/src PGBIN=$(pg_config --bindir) \
            /usr/bin/python3 "$ROOT/test/pooler/attack124.py" "host=127.0.0.1 port=${p#*:} user=postgres dbname=postgres" \
            "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" "$FENCING_CLUSTER_DIR/data" \
            "$lib, pgbouncer 1.${p:1:2}, pool ${ATTACK_POOL:-2}" "$SECONDS_EACH" || status=1
    done
done
exit $status
