# A Citus coordinator and two workers on loopback, started from scratch for
# the suites of test/citus/ (source it after test/lib/checks.sh): ports
# CITUS_PORTS (default "54601 54602 54603"), C, W1, W2, the helpers q and
# state, and the nodes stopped and removed on exit. Exits 77 (a skip, never
# a pass) when Citus is not installed into the PostgreSQL pg_config names.
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
if [ ! -f "$($PG_CONFIG --pkglibdir)/citus.so" ]; then
    echo "SKIPPED: Citus is not installed in $($PG_CONFIG --pkglibdir) (no check ran)"
    exit 77
fi
read -r -a PORTS <<< "${CITUS_PORTS:-54601 54602 54603}"
C=${PORTS[0]}; W1=${PORTS[1]}; W2=${PORTS[2]}
BASE=$(mktemp -d /tmp/fencing-citus.XXXXXX)
SOCK=$BASE/sock
mkdir -p "$SOCK"
RUN=()
[ "$(id -u)" = 0 ] && { chown -R postgres "$BASE"; RUN=(runuser -u postgres --); }

stop_all() {
    for p in "${PORTS[@]}"; do "${RUN[@]}" "$BIN/pg_ctl" -D "$BASE/n$p" -m immediate -w stop >/dev/null 2>&1; done
    rm -rf "$BASE"
}
trap stop_all EXIT

for p in "${PORTS[@]}"; do
    "${RUN[@]}" "$BIN/initdb" -D "$BASE/n$p" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null || exit 1
    cat >> "$BASE/n$p/postgresql.conf" <<CONF
port = $p
listen_addresses = '127.0.0.1'
unix_socket_directories = '$SOCK'
shared_preload_libraries = 'citus,fencing'
wal_level = logical
max_connections = 60
max_worker_processes = 16
fsync = off
citus.enable_statistics_collection = off
citus.local_hostname = '127.0.0.1'
CONF
    "${RUN[@]}" "$BIN/pg_ctl" -D "$BASE/n$p" -l "$BASE/n$p.log" -w start >/dev/null || { tail "$BASE/n$p.log"; exit 1; }
done

# q PORT SQL: the statements' output (psql reads them one by one from stdin),
# unaligned, tuples only; the last line.
q() {
    "${RUN[@]}" "$BIN/psql" -h "$SOCK" -p "$1" -U postgres -d postgres -X -q -At \
        -v VERBOSITY=sqlstate <<< "$2" 2>&1 | tail -1
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

for p in "${PORTS[@]}"; do q "$p" "CREATE EXTENSION citus" >/dev/null; done
q $C "SELECT citus_set_coordinator_host('127.0.0.1', $C)" >/dev/null
q $C "SELECT 1 FROM citus_add_node('127.0.0.1', $W1)" >/dev/null
q $C "SELECT 1 FROM citus_add_node('127.0.0.1', $W2)" >/dev/null
