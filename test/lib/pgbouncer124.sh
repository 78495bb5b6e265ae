#!/usr/bin/env bash
# Debian 13's PgBouncer (1.24, max_prepared_statements) for the suites that
# run behind a pooler, from the cached trixie chroot (test/matrix/chroot.sh,
# root). It shares the host's network, so it listens on 127.0.0.1:PORT and
# reaches the scratch cluster on 127.0.0.1:SERVER_PORT.
#
#   test/lib/pgbouncer124.sh start DIR PORT SERVER_PORT [MODE [POOL_SIZE]]
#   test/lib/pgbouncer124.sh start-host DIR PORT SERVER_PORT [MODE [POOL_SIZE]]
#                            the same configuration with the host's PgBouncer
#                            (Debian 12: 1.18), without max_prepared_statements
#   test/lib/pgbouncer124.sh stop DIR
#   test/lib/pgbouncer124.sh available    exit 0 when it can run here
#
# MODE is the pool_mode (default transaction), POOL_SIZE the server
# connections per pool (default 1). Every database name maps to the same name
# on the server (a "*" entry), or PGBOUNCER124_DATABASES="ALIAS:DBNAME ..."
# names the pools (each its own pool on DBNAME; "ALIAS:DBNAME:SIZE" gives that
# pool SIZE server connections instead of POOL_SIZE); max_prepared_statements = 200
# (PGBOUNCER124_MAX_PREPARED=0: not tracked, as before 1.21) and
# auth_type = trust for the users postgres and app, as the host's 1.18 runs.
# PGBOUNCER124_EXTRA: more [pgbouncer] lines (e.g. "server_login_retry = 1").
# It runs in the foreground of a background chroot.sh, as the host's postgres
# user (the chroot's has another uid), its pidfile, log and config in DIR
# (bind-mounted at the same path). Callers stop it on exit (a trap).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CHROOT=$HERE/../matrix/chroot.sh

wait_port() {  # wait_port PORT UP|DOWN SECONDS
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            [ "$2" = UP ] && return 0
        else
            [ "$2" = DOWN ] && return 0
        fi
        sleep 0.1
    done
    return 1
}

case ${1:-} in
available)
    # As root the chroot is made (and cached) here when missing: a fresh CI
    # machine has none when the client suites run, and they must not skip.
    [ "$(id -u)" = 0 ] && root=$("$CHROOT" trixie 2>/dev/null) && [ -x "$root/usr/sbin/pgbouncer" ]
    ;;
start | start-host)
    dir=${2:?DIR} port=${3:?PORT} server=${4:?SERVER_PORT} mode=${5:-transaction} size=${6:-1}
    mkdir -p "$dir"
    dbs="* = host=127.0.0.1 port=$server"
    if [ -n "${PGBOUNCER124_DATABASES:-}" ]; then
        dbs=
        for d in $PGBOUNCER124_DATABASES; do
            IFS=: read -r alias dbname poolsize <<<"$d"
            dbs+="$alias = host=127.0.0.1 port=$server dbname=$dbname${poolsize:+ pool_size=$poolsize}"$'\n'
        done
    fi
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
$dbs

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
admin_users = postgres
auth_file = $dir/users.txt
pool_mode = $mode
default_pool_size = $size
max_client_conn = 200
$([ "$1" = start ] && echo "max_prepared_statements = ${PGBOUNCER124_MAX_PREPARED:-200}")
server_check_delay = 0
${PGBOUNCER124_EXTRA:-}
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
    printf '"postgres" ""\n"app" ""\n' >"$dir/users.txt"
    rm -f "$dir/pgbouncer.pid"
    [ "$(id -u)" != 0 ] || chown -R postgres "$dir"
    if [ "$1" = start-host ]; then
        if [ "$(id -u)" = 0 ]; then runuser -u postgres -- pgbouncer -d "$dir/pgbouncer.ini"; else pgbouncer -d "$dir/pgbouncer.ini"; fi
        wait_port "$port" UP 30
        exit
    fi
    FENCING_CHROOT_BIND="$dir:$dir" setsid "$CHROOT" trixie -- \
        setpriv --reuid="$(id -u postgres)" --regid="$(id -g postgres)" --clear-groups \
        /usr/sbin/pgbouncer "$dir/pgbouncer.ini" >"$dir/stdout" 2>&1 </dev/null &
    if ! wait_port "$port" UP 60; then
        echo "pgbouncer 1.24 did not listen on $port:" >&2
        tail -20 "$dir/stdout" "$dir/pgbouncer.log" >&2 2>/dev/null || true
        exit 1
    fi
    ;;
stop)
    dir=${2:?DIR}
    [ -f "$dir/pgbouncer.ini" ] || exit 0
    port=$(sed -n 's/^listen_port = //p' "$dir/pgbouncer.ini")
    # From 1.23 SIGTERM waits for every client; SIGQUIT is the immediate stop
    # (before 1.23, SIGTERM).
    grep -q '^max_prepared' "$dir/pgbouncer.ini" || sig=TERM
    [ -f "$dir/pgbouncer.pid" ] && kill -"${sig:-QUIT}" "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true
    wait_port "$port" DOWN 30 || true
    ;;
*)
    echo "usage: $0 start|start-host DIR PORT SERVER_PORT [MODE [POOL_SIZE]] | stop DIR | available" >&2
    exit 2
    ;;
esac
