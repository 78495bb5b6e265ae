#!/usr/bin/env bash
# The extension behind Debian's PgBouncer (test/pooler/clients.py), with several
# clients sharing one server connection (default_pool_size = 1) in transaction,
# statement and session pooling. Starts its own scratch cluster and two PgBouncers,
# as the postgres user, on private ports, socket directories, configs, pidfiles and
# logfiles, and stops them on exit. Prints "ok N - ..." lines. Builds the
# programs of test/pooler/batches/ first (pgx, pgjdbc, node-postgres batches and
# multi-statement strings; clients.py runs them direct and behind both PgBouncers).
#
#   bare         server_reset_query = '' : nothing is reset when a server
#                connection changes clients, in any mode (the worst case)
#   recommended  server_reset_query = DISCARD ALL, server_reset_query_always = 1
#                (docs/poolers.md)
#
# Each PgBouncer serves the database "atk" three times, one pool per mode:
# tx (transaction), stmt (statement), sess (session), and role (transaction),
# whose server connection opens after ALTER ROLE ... SET fencing.token.
#
#   POOLER_PGPORT   the scratch cluster's port (default 55420); the PgBouncers
#                   listen on the next two ports
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=${POOLER_PGPORT:-55420}
BARE_PORT=$((PORT + 1))
REC_PORT=$((PORT + 2))
export FENCING_PGPORT=$PORT
export FENCING_CLUSTER_DIR=${POOLER_DIR:-/tmp/fencing-pooler-$PORT}
ROOT=$FENCING_CLUSTER_DIR
PGBOUNCER=${PGBOUNCER:-$(command -v pgbouncer || echo /usr/sbin/pgbouncer)}

as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop_all() {
    local f
    for f in "$ROOT"/bouncer-*/pgbouncer.pid; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
    test/cluster.sh stop
}
stop_all
trap stop_all EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
SOCK=$PGHOST

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE ROLE app LOGIN;
CREATE DATABASE atk OWNER app;
SQL
PGDATABASE=atk psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION fencing'

# bouncer NAME PORT RESET_QUERY RESET_ALWAYS
bouncer() {
    local dir=$ROOT/bouncer-$1
    as_postgres mkdir -p "$dir/sock"
    local db="host=$SOCK port=$PORT dbname=atk pool_size=1"
    as_postgres tee "$dir/pgbouncer.ini" >/dev/null <<INI
[databases]
tx = $db pool_mode=transaction
stmt = $db pool_mode=statement
sess = $db pool_mode=session
role = $db pool_mode=transaction

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $2
unix_socket_dir = $dir/sock
auth_type = trust
auth_file = $dir/userlist.txt
default_pool_size = 1
max_client_conn = 100
server_reset_query = $3
server_reset_query_always = $4
server_check_delay = 0
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
    echo '"app" ""' | as_postgres tee "$dir/userlist.txt" >/dev/null
    as_postgres "$PGBOUNCER" -d -q "$dir/pgbouncer.ini"
}
bouncer bare "$BARE_PORT" "" 0
bouncer recommended "$REC_PORT" "DISCARD ALL" 1

export POOLER_BARE_PORT=$BARE_PORT POOLER_REC_PORT=$REC_PORT

# The programs of test/pooler/batches/ (pgx, pgjdbc, node-postgres). A build
# that fails leaves its variable empty and clients.py fails that driver's checks.
BATCHES=test/pooler/batches
BUILD=$ROOT/batches
mkdir -p "$BUILD/java" "$BUILD/node"
export POOLER_BATCH_GO="" POOLER_BATCH_JAVA="" POOLER_BATCH_NODE=""
if bash "$BATCHES/go.sh" "$BUILD/batch-go" >"$BUILD/go.log" 2>&1; then
    POOLER_BATCH_GO=$BUILD/batch-go
else
    echo "# pgx program not built (Go 1.26 and pgx v5: clients/go/deps.sh):"; sed 's/^/#   /' "$BUILD/go.log"
fi
if javac -Xlint:all -Werror -cp /usr/share/java/postgresql.jar -d "$BUILD/java" "$BATCHES/Batch.java" \
    >"$BUILD/java.log" 2>&1 && java -version >>"$BUILD/java.log" 2>&1; then
    POOLER_BATCH_JAVA=$BUILD/java:/usr/share/java/postgresql.jar
else
    echo "# pgjdbc program not built (default-jdk-headless, libpostgresql-jdbc-java):"; sed 's/^/#   /' "$BUILD/java.log"
fi
cp "$BATCHES/package.json" "$BATCHES/package-lock.json" "$BUILD/node/"
if (cd "$BUILD/node" && npm ci --no-audit --no-fund --prefer-offline) >"$BUILD/node.log" 2>&1 &&
    node --version >>"$BUILD/node.log" 2>&1; then
    POOLER_BATCH_NODE=$BUILD/node/node_modules
else
    echo "# node-postgres not installed (nodejs, npm):"; sed 's/^/#   /' "$BUILD/node.log"
fi
status=0
/usr/bin/python3 test/pooler/clients.py || status=$?
if [ $status -ne 0 ]; then
    for f in "$ROOT"/bouncer-*/pgbouncer.log; do
        echo "# --- $f (tail)"
        tail -n 20 "$f" | sed 's/^/# /'
    done
fi
exit $status
