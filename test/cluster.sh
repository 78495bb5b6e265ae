#!/usr/bin/env bash
# A scratch PostgreSQL cluster for tests and the demo.
#
#   test/cluster.sh start   initdb (if needed) and start; prints nothing else
#   test/cluster.sh stop    stop and delete the cluster
#   test/cluster.sh env     print PG* exports for clients: eval "$(test/cluster.sh env)"
#
# It never touches a system cluster: its own data directory, a private port and a
# private socket directory. PostgreSQL refuses to run as root, so under root the
# server runs as the "postgres" user that Debian's packages create.
set -euo pipefail

PGBIN=$(pg_config --bindir)
PORT=${FENCING_PGPORT:-54329}
ROOT=${FENCING_CLUSTER_DIR:-/tmp/fencing-cluster-$PORT}
DATA=$ROOT/data
SOCK=$ROOT/sock
LOG=$ROOT/server.log

as_server_user() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- env -C "$ROOT" "$@"
    else
        "$@"
    fi
}

start() {
    if [ ! -d "$DATA" ]; then
        mkdir -p "$ROOT"
        [ "$(id -u)" = 0 ] && chown postgres: "$ROOT"
        as_server_user mkdir -p "$SOCK"
        as_server_user "$PGBIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$ROOT/initdb.log"
        cat >>"$DATA/postgresql.conf" <<CONF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$SOCK'
fsync = on
max_connections = 120
max_prepared_transactions = 10
log_min_messages = warning
log_line_prefix = '%m [%p] '
CONF
    fi
    as_server_user "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null
}

stop() {
    if [ -f "$DATA/postmaster.pid" ]; then
        as_server_user "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$ROOT"
}

env_exports() {
    echo "export PGHOST='$SOCK' PGPORT='$PORT' PGUSER=postgres PGDATABASE=postgres"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) env_exports ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
