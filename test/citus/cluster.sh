#!/bin/bash
# Shared by the test/citus suites (source it): a coordinator and two workers
# on loopback, started from scratch under a private directory and removed on
# exit.
#   citus_cluster DEFAULT_PORTS PORTS_VAR [CONF_LINE...]
# reads the ports from the variable named PORTS_VAR (else DEFAULT_PORTS) and
# sets PORTS, C, W1, W2, BASE, SOCK, RUN (runuser under root) and BIN; each
# CONF_LINE is added to every node's postgresql.conf. citus_topology then
# creates citus on every node, adds the workers and CREATE EXTENSION fencing on
# the coordinator; q PORT SQL runs SQL and prints its last line.

citus_cluster() {
    local ports=${!2:-$1} p line
    shift 2
    read -r -a PORTS <<< "$ports"
    C=${PORTS[0]}; W1=${PORTS[1]}; W2=${PORTS[2]}
    BIN=$(${PG_CONFIG:-pg_config} --bindir)
    BASE=$(mktemp -d /tmp/fencing-citus.XXXXXX)
    chmod 755 "$BASE"
    SOCK=$BASE/sock
    mkdir -p "$SOCK"
    RUN=()
    [ "$(id -u)" = 0 ] && { chown -R postgres "$BASE"; RUN=(runuser -u postgres --); }
    trap citus_cluster_stop EXIT
    for p in "${PORTS[@]}"; do
        "${RUN[@]}" "$BIN/initdb" -D "$BASE/n$p" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null || exit 1
        cat >> "$BASE/n$p/postgresql.conf" <<CONF
port = $p
listen_addresses = '127.0.0.1'
unix_socket_directories = '$SOCK'
shared_preload_libraries = 'citus,fencing'
max_connections = 60
max_worker_processes = 16
fsync = off
citus.enable_statistics_collection = off
citus.local_hostname = '127.0.0.1'
CONF
        for line in "$@"; do echo "$line" >> "$BASE/n$p/postgresql.conf"; done
        "${RUN[@]}" "$BIN/pg_ctl" -D "$BASE/n$p" -l "$BASE/n$p.log" -w start >/dev/null || { tail "$BASE/n$p.log"; exit 1; }
    done
}

citus_cluster_stop() {
    for p in "${PORTS[@]}"; do "${RUN[@]}" "$BIN/pg_ctl" -D "$BASE/n$p" -m immediate -w stop >/dev/null 2>&1; done
    rm -rf "$BASE"
}

q() {  # q PORT SQL: the statements' output (psql reads them one by one from stdin), unaligned, tuples only; the last line
    "${RUN[@]}" "$BIN/psql" -h "$SOCK" -p "$1" -U postgres -d postgres -X -q -At \
        -v VERBOSITY=sqlstate <<< "$2" 2>&1 | tail -1
}

citus_topology() {
    local p
    for p in "${PORTS[@]}"; do q "$p" "CREATE EXTENSION citus" >/dev/null; done
    q $C "SELECT citus_set_coordinator_host('127.0.0.1', $C)" >/dev/null
    q $C "SELECT 1 FROM citus_add_node('127.0.0.1', $W1)" >/dev/null
    q $C "SELECT 1 FROM citus_add_node('127.0.0.1', $W2)" >/dev/null
    q $C "CREATE EXTENSION fencing" >/dev/null
}

skip_without_citus() {  # exit 77 (a skip, never a pass) unless Citus is installed in pg_config's PostgreSQL
    local ext
    ext=$(${PG_CONFIG:-pg_config} --sharedir)/extension
    if [ ! -f "$ext/citus.control" ]; then
        echo "SKIPPED: Citus is not installed in $ext (no check ran)"
        exit 77
    fi
}

# state PORT SQL: the SQLSTATE of the first error, or "ok". A 0A000 counts
# as fencing's refusal only with its HINT pointing to docs/citus.md (Citus
# raises 0A000 for what it does not support): else "0A000 (not fencing's)".
state() {
    local out code
    out=$("${RUN[@]}" "$BIN/psql" -h "$SOCK" -p "$1" -U postgres -d postgres -X -q -At \
        -v VERBOSITY=verbose <<< "$2" 2>&1)
    code=$(sed -n 's/^.*ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' <<< "$out" | head -1)
    if [ "$code" = 0A000 ] && ! grep -q "docs/citus.md" <<< "$out"; then
        code="0A000 (not fencing's)"
    fi
    echo "${code:-ok}"
}
