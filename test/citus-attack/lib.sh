#!/bin/bash
# Shared by the attack scripts: a coordinator and two workers on loopback
# (ATK_PORTS, default "55601 55602 55603"), started fresh by start_cluster.
set -uo pipefail
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
read -r -a PORTS <<< "${ATK_PORTS:-55601 55602 55603}"
C=${PORTS[0]}; W1=${PORTS[1]}; W2=${PORTS[2]}
BASE=${ATK_BASE:-/tmp/atk31-citus}
SOCK=$BASE/sock
RUN=()
[ "$(id -u)" = 0 ] && RUN=(runuser -u postgres --)

start_cluster() {
    stop_cluster
    mkdir -p "$SOCK"; [ "$(id -u)" = 0 ] && chown -R postgres "$BASE"
    for p in "${PORTS[@]}"; do
        "${RUN[@]}" "$BIN/initdb" -D "$BASE/n$p" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null || exit 1
        cat >> "$BASE/n$p/postgresql.conf" <<CONF
port = $p
listen_addresses = '127.0.0.1'
unix_socket_directories = '$SOCK'
shared_preload_libraries = 'citus,fencing'
wal_level = logical
max_connections = 80
max_worker_processes = 16
max_prepared_transactions = 40
fsync = off
citus.enable_statistics_collection = off
citus.local_hostname = '127.0.0.1'
CONF
        "${RUN[@]}" "$BIN/pg_ctl" -D "$BASE/n$p" -l "$BASE/n$p.log" -w start >/dev/null || { tail "$BASE/n$p.log"; exit 1; }
    done
    for p in "${PORTS[@]}"; do q "$p" "CREATE EXTENSION citus" >/dev/null; done
    [ "${ATK_NO_COORD_HOST:-}" = 1 ] || q $C "SELECT citus_set_coordinator_host('127.0.0.1', $C)" >/dev/null
    q $C "SELECT 1 FROM citus_add_node('127.0.0.1', $W1)" >/dev/null
    q $C "SELECT 1 FROM citus_add_node('127.0.0.1', $W2)" >/dev/null
    q $C "CREATE EXTENSION fencing" >/dev/null
}
stop_cluster() {
    for p in "${PORTS[@]}"; do "${RUN[@]}" "$BIN/pg_ctl" -D "$BASE/n$p" -m immediate -w stop >/dev/null 2>&1; done
    rm -rf "$BASE"
}
# q PORT SQL [USER]: output, unaligned, tuples only; the last line.
q() {
    "${RUN[@]}" "$BIN/psql" -h "$SOCK" -p "$1" -U "${3:-postgres}" -d postgres -X -q -At \
        -v VERBOSITY=sqlstate <<< "$2" 2>&1 | tail -1
}
# state PORT SQL [USER]: SQLSTATE of the first error, or ok.
state() {
    local out code
    out=$("${RUN[@]}" "$BIN/psql" -h "$SOCK" -p "$1" -U "${3:-postgres}" -d postgres -X -q -At \
        -v VERBOSITY=verbose <<< "$2" 2>&1)
    code=$(sed -n 's/^.*ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' <<< "$out" | head -1)
    echo "${code:-ok}"
}
say() { printf '%-80s %s\n' "$1" "$2"; }
STALE=0; TWICE=0
stale_if_ok() { # label state: a stale write that came back ok is counted
    say "$1" "$2"; [ "$2" = ok ] && STALE=$((STALE + 1)); true
}
summary() { echo "RESULT $(basename "$0"): stale accepted $STALE, tokens issued twice $TWICE"; }
