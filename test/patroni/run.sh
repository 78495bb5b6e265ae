#!/usr/bin/env bash
# Fencing under Patroni (Debian's patroni, etcd3 DCS on one loopback etcd):
# two PostgreSQL nodes, synchronous_mode + synchronous_mode_strict, clients
# that write and take leases through a multi-host connection string with
# target_session_attrs=read-write, and two failovers: `patronictl switchover`
# and kill -9 of the primary's postmaster. After each: every HWM is at least
# the last acknowledged value, no lease token was issued twice, and stale
# writers are refused on the new primary. Prints "ok N - ..." lines, the
# figures, and a summary line. Ports FENCING_PATRONI_PORT .. +5 (etcd client,
# etcd peer, node1, node2, node1 REST, node2 REST). Needs the extension
# installed (make install) in the PostgreSQL tree of the pg_config on PATH.
set -uo pipefail
cd "$(dirname "$0")/../.."
PGBIN=$(pg_config --bindir)
BASE=${FENCING_PATRONI_PORT:-54419}
ETCD_PORT=$BASE
ETCD_PEER=$((BASE + 1))
PG_PORT=([1]=$((BASE + 2)) [2]=$((BASE + 3)))
API_PORT=([1]=$((BASE + 4)) [2]=$((BASE + 5)))
ROOT=/tmp/fencing-patroni-$BASE
RUN=$ROOT/run
WORKLOAD=$(pwd)/test/patroni/workload.py
PY=/usr/bin/python3
export PGHOST=127.0.0.1 PGUSER=postgres PGDATABASE=postgres PGCONNECT_TIMEOUT=5
export PATRONI_DSN="host=127.0.0.1,127.0.0.1 port=${PG_PORT[1]},${PG_PORT[2]} user=postgres dbname=postgres
 target_session_attrs=read-write connect_timeout=3 keepalives_idle=2 keepalives_interval=1 keepalives_count=3"

# Under root, as postgres and from $ROOT: the checkout may not be enterable by
# postgres (a clone under a 0700 mktemp directory), and Patroni's bootstrap
# (initdb, pg_ctl) fails in a working directory it cannot enter.
as_server_user() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- env -C "$ROOT" "$@"; else "$@"; fi; }
client_pids=()

stop_pid() {  # stop_pid PID SECONDS [MARK]: TERM, wait, then KILL; with MARK only
    local pid=$1 i  # when MARK is in its command line (a pid file of an earlier run)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    [ -n "${3:-}" ] && ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$3" && return 0
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < $2 * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
}
cleanup() {
    local i pid f
    # On a failure, the logs (they go with the temporary directory).
    if [ "${fail:-0}" -gt 0 ] && [ -d "$ROOT" ]; then
        for f in "$ROOT"/node*/patroni.log "$ROOT/switchover.log" "$RUN"/*.log; do
            [ -s "$f" ] && { echo "# --- $f (tail)"; tail -40 "$f" | sed 's/^/# /'; }
        done
    fi
    [ -d "$RUN" ] && touch "$RUN/stop"
    for pid in "${client_pids[@]}"; do stop_pid "$pid" 5; done
    # Patroni stops its PostgreSQL on SIGTERM; anything left is stopped here.
    for i in 1 2; do
        [ -f "$ROOT/node$i/patroni.pid" ] && stop_pid "$(cat "$ROOT/node$i/patroni.pid")" 30 "$ROOT/node$i/patroni.yml"
    done
    for i in 1 2; do
        [ -f "$ROOT/node$i/data/postmaster.pid" ] &&
            as_server_user "$PGBIN/pg_ctl" -D "$ROOT/node$i/data" -m immediate stop >/dev/null 2>&1
    done
    [ -f "$ROOT/etcd.pid" ] && stop_pid "$(cat "$ROOT/etcd.pid")" 10 "$ROOT/etcd"
    rm -rf "$ROOT"
}
interrupted() { exit 143; }
cleanup  # what an earlier run that was killed left behind
trap cleanup EXIT
trap interrupted TERM INT HUP

source test/lib/checks.sh

# Fail before starting anything when a tool is missing.
for tool in /usr/bin/patroni /usr/bin/patronictl /usr/bin/etcd; do
    if [ ! -x "$tool" ]; then
        check "$tool is installed (test/install-deps.sh)" yes no
        finish
        exit 1
    fi
done

mkdir -p "$ROOT" "$RUN"
[ "$(id -u)" = 0 ] && chown postgres: "$ROOT"
as_server_user mkdir -p "$ROOT/node1" "$ROOT/node2"

# --- etcd, one member on loopback -------------------------------------------
/usr/bin/etcd --name fencing-patroni --data-dir "$ROOT/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "fencing-patroni=http://127.0.0.1:$ETCD_PEER" --initial-cluster-state new \
    >"$ROOT/etcd.log" 2>&1 &
echo $! >"$ROOT/etcd.pid"

http_get() {  # http_get URL: the body, or nothing
    $PY - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())
except Exception as e:
    if hasattr(e, "read"):
        print(e.read().decode())
PY
}
# Every wait is bounded, and all of them together by BUDGET seconds, so a
# stuck cluster fails the suite instead of hanging it.
BUDGET_END=$((SECONDS + ${FENCING_PATRONI_BUDGET:-420}))
wait_for() {  # wait_for SECONDS COMMAND...: until COMMAND succeeds; 1 on timeout
    local deadline=$((SECONDS + $1))
    [ $deadline -gt $BUDGET_END ] && deadline=$BUDGET_END
    shift
    until "$@"; do
        [ $SECONDS -ge $deadline ] && return 1
        sleep 0.5
    done
}
require() {  # require DESCRIPTION EXPECTED ACTUAL: a check the rest depends on
    check "$@"
    [ "$2" = "$3" ] && return 0
    echo "# stopping here: the remaining steps depend on this"
    finish
    exit 1
}
etcd_healthy() { http_get "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
wait_for 30 etcd_healthy
require "etcd runs on 127.0.0.1:$ETCD_PORT" yes "$(etcd_healthy && echo yes || echo no)"

# --- Patroni ------------------------------------------------------------------
write_config() {  # write_config I
    local i=$1
    as_server_user tee "$ROOT/node$i/patroni.yml" >/dev/null <<YAML
scope: fencing-patroni
namespace: /fencing-test/
name: node$i
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${API_PORT[$i]}
  connect_address: 127.0.0.1:${API_PORT[$i]}
etcd3:
  hosts: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    # Every commit waits for the synchronous standby, and with _strict also
    # when there is none: the primary then takes no commit at all.
    synchronous_mode: true
    synchronous_mode_strict: true
    # A crashed primary is not restarted in place: fail over to the
    # synchronous standby at once.
    primary_start_timeout: 0
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        fsync: 'on'
        synchronous_commit: 'on'
        wal_level: replica
        wal_log_hints: 'on'
        max_wal_senders: 5
        max_replication_slots: 5
        max_connections: 40
        shared_buffers: 16MB
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
postgresql:
  listen: 127.0.0.1:${PG_PORT[$i]}
  connect_address: 127.0.0.1:${PG_PORT[$i]}
  data_dir: $ROOT/node$i/data
  bin_dir: $PGBIN
  pgpass: $ROOT/node$i/pgpass
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser:
      username: postgres
      password: fencing
    replication:
      username: replicator
      password: fencing
    rewind:
      username: postgres
      password: fencing
  parameters:
    unix_socket_directories: $ROOT/node$i
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
YAML
}
start_patroni() {  # start_patroni I: in the background, as the server user
    local i=$1
    as_server_user sh -c 'echo $$ >"$1/patroni.pid"; exec /usr/bin/patroni "$1/patroni.yml" >>"$1/patroni.log" 2>&1' \
        sh "$ROOT/node$i" &
}
# "LEADER SYNC": the running leader and the synchronous standby that streams
# from it, from Patroni's REST API (either node); "-" when there is none.
roles() {
    local i body
    for i in 1 2; do
        body=$(http_get "http://127.0.0.1:${API_PORT[$i]}/cluster")
        [ -n "$body" ] && break
    done
    printf '%s' "$body" | $PY -c '
import json, sys
try:
    members = json.load(sys.stdin)["members"]
except Exception:
    members = []
leader = [m["name"] for m in members if m.get("role") in ("leader", "master", "primary") and m.get("state") == "running"]
sync = [m["name"] for m in members if m.get("role") == "sync_standby" and m.get("state") in ("running", "streaming")]
print(leader[0] if leader else "-", sync[0] if sync else "-")'
}
q() {  # q I SQL: run on node I
    timeout 30 psql -X -At -q -p "${PG_PORT[$1]}" -c "$2" 2>&1
}
sync_streaming() {  # sync_streaming I: node I is primary with a synchronous standby
    [ "$(q "$1" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ] &&
        [ "$(q "$1" "SELECT pg_is_in_recovery()")" = f ]
}
ready() {  # ready LEADER SYNC
    [ "$(roles)" = "node$1 node$2" ] && sync_streaming "$1"
}

write_config 1
write_config 2
start_patroni 1
wait_for 90 eval '[ "$(roles | cut -d" " -f1)" = node1 ]'
require "node1 bootstrapped and leads" node1 "$(roles | cut -d' ' -f1)"
start_patroni 2
wait_for 120 ready 1 2
require "node2 is node1's synchronous standby" "node1 node2" "$(roles)"
check "synchronous_standby_names set by Patroni on node1" node2 "$(q 1 'SHOW synchronous_standby_names' | tr -d '"')"
check "fsync is on" on "$(q 1 'SHOW fsync')"

psql -X -q -p "${PG_PORT[1]}" -v ON_ERROR_STOP=1 >"$ROOT/setup.log" 2>&1 <<'SQL'
CREATE EXTENSION fencing;
SET client_min_messages = warning;
CREATE TABLE inv (item text PRIMARY KEY, stock bigint, fence fencing_token);
INSERT INTO inv VALUES ('a', 0, 1), ('b', 0, 1);
CREATE TABLE orders (id bigserial PRIMARY KEY, shard text NOT NULL, n bigint, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
CREATE TABLE ledger (id bigserial PRIMARY KEY, n bigint, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
SQL
require "extension and fenced tables (row, resource, table scope) created" 3 \
    "$(q 1 "SELECT count(*) FROM fencing_protected WHERE scope IN ('row', 'resource', 'table')")"

# --- clients ----------------------------------------------------------------
$PY "$WORKLOAD" writer "$RUN" >"$RUN/writer.log" 2>&1 &
client_pids+=($!)
for k in 1 2; do
    $PY "$WORKLOAD" leaser "$RUN" "$k" >"$RUN/leaser$k.log" 2>&1 &
    client_pids+=($!)
done
progress() {  # progress T WRITES LEASES: that many acknowledged after time T
    local s
    s=$($PY "$WORKLOAD" summary "$RUN" --after "$1")
    [ "$(awk '$1 == "writes" { print $2 }' <<<"$s")" -ge "$2" ] &&
        [ "$(awk '$1 == "leases" { print $2 }' <<<"$s")" -ge "$3" ]
}
wait_for 60 progress 0 50 10
require "clients write and take leases through the multi-host connection string" yes \
    "$(progress 0 50 10 && echo yes || echo no)"

regressions=0
failovers=0
# after_failover LABEL NEW_PRIMARY T: the checks on the new primary; T is the
# moment the failover began.
after_failover() {
    local label=$1 p=$2 t=$3 acks line kind key token hwm ok all_ok=yes before max_hot first_hot
    # Read the acknowledgements first: an HWM read later must be at least each.
    acks=$($PY "$WORKLOAD" summary "$RUN")
    while read -r line; do
        read -r _ kind key token <<<"$line"
        case $kind in
        row) hwm=$(q "$p" "SELECT fencing_high_water('inv', jsonb_build_object('item', '$key'))") ;;
        table) hwm=$(q "$p" "SELECT fencing_high_water('ledger')") ;;
        resource | lease) hwm=$(q "$p" "SELECT fencing_resource_high_water('$key')") ;;
        esac
        if [[ $hwm =~ ^[0-9]+$ ]] && [ "$hwm" -ge "$token" ]; then ok=yes; else
            ok=no
            all_ok=no
            regressions=$((regressions + 1))
        fi
        check "$label: $kind HWM of $key ($hwm) >= last acknowledged ($token)" yes $ok
    done < <(grep '^max ' <<<"$acks")
    check "$label: HWMs of every scope and lease checked" yes "$all_ok"
    # Leases: the first token of the shared resource issued after the failover
    # is above every token acknowledged before it; none issued twice so far.
    before=$($PY "$WORKLOAD" summary "$RUN" --before "$t")
    max_hot=$(awk '$1 == "max" && $2 == "lease" && $3 == "hot" { print $4 }' <<<"$before")
    first_hot=$($PY "$WORKLOAD" summary "$RUN" --after "$t" | awk '$1 == "first" && $3 == "hot" { print $4 }')
    check "$label: first lease token on hot after the failover ($first_hot) > last before ($max_hot)" yes \
        "$([ -n "$first_hot" ] && [ -n "$max_hot" ] && [ "$first_hot" -gt "$max_hot" ] && echo yes || echo no)"
    check "$label: no lease token issued twice" 0 "$(awk '$1 == "lease_duplicates" { print $2 }' <<<"$acks")"
    check "$label: lease tokens strictly increase per resource in issue order (across clients)" 0 \
        "$(awk '$1 == "lease_order_violations" { print $2 }' <<<"$acks")"
    # Stale writers, one token below the acknowledged HWMs.
    local ra rb s1 tab
    ra=$(awk '$1 == "max" && $2 == "row" && $3 == "a" { print $4 }' <<<"$acks")
    rb=$(awk '$1 == "max" && $2 == "row" && $3 == "b" { print $4 }' <<<"$acks")
    s1=$(awk '$1 == "max" && $2 == "resource" && $3 == "s1" { print $4 }' <<<"$acks")
    tab=$(awk '$1 == "max" && $2 == "table" { print $4 }' <<<"$acks")
    check "$label: stale fenced_update (row scope, $((ra - 1))) returns 0 rows on the new primary" 0 \
        "$(q "$p" "SELECT fenced_update('inv', $((ra - 1)), '{\"item\": \"a\"}', '{\"stock\": -1}')")"
    check "$label: stale UPDATE (row scope, $((rb - 1))) refused" TF001 \
        "$(sqlstate_of "UPDATE inv SET stock = -1, fence = $((rb - 1)) WHERE item = 'b'" -p "${PG_PORT[$p]}")"
    check "$label: stale transparent-mode INSERT (resource scope, $((s1 - 1))) refused" TF001 \
        "$(sqlstate_of "BEGIN; SET LOCAL fencing.token = $((s1 - 1)); INSERT INTO orders (shard, n) VALUES ('s1', -1); COMMIT" -p "${PG_PORT[$p]}")"
    check "$label: stale INSERT (table scope, $((tab - 1))) refused" TF001 \
        "$(sqlstate_of "INSERT INTO ledger (n, fence) VALUES (-1, $((tab - 1)))" -p "${PG_PORT[$p]}")"
    check "$label: holder of a pre-failover lease on hot ($max_hot) fenced on the new primary" TF001 \
        "$(sqlstate_of "INSERT INTO orders (shard, n, fence) VALUES ('hot', -1, $max_hot)" -p "${PG_PORT[$p]}")"
    check "$label: pre-failover lease on hot cannot be renewed" f \
        "$(q "$p" "SELECT fencing_renew('hot', $max_hot, '3 s')")"
}
# reconnected LABEL T: the clients are acknowledged again after time T, the
# failover counts as done.
reconnected() {
    local ok=no
    wait_for 90 progress "$2" 30 6 && ok=yes && failovers=$((failovers + 1))
    check "$1: clients reconnected and were acknowledged again" yes $ok
}

# --- failover 1: switchover -------------------------------------------------
t=$(date +%s.%N)
timeout 60 patronictl -c "$ROOT/node1/patroni.yml" switchover --leader node1 --candidate node2 --force \
    >"$ROOT/switchover.log" 2>&1
wait_for 120 ready 2 1
require "switchover: node2 leads, node1 is its synchronous standby" "node2 node1" "$(roles)"
reconnected switchover "$t"
after_failover switchover 2 "$t"

# --- failover 2: kill -9 of the primary's postmaster --------------------------
pm=$(head -1 "$ROOT/node2/data/postmaster.pid" 2>/dev/null)
t=$(date +%s.%N)
[ -n "$pm" ] && kill -9 "$pm"
gone() {  # gone PID: exited (a zombie until Patroni reaps it counts)
    ! kill -0 "$1" 2>/dev/null || [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]
}
wait_for 10 gone "$pm"
check "kill -9 of node2's postmaster ($pm)" yes "$([ -n "$pm" ] && gone "$pm" && echo yes || echo no)"
wait_for 60 eval '[ "$(roles | cut -d" " -f1)" = node1 ]'
require "kill -9: node1 (the synchronous standby) took over" node1 "$(roles | cut -d' ' -f1)"
# Strict mode: node1 takes no commit until node2 is back as its standby.
wait_for 150 ready 1 2
require "kill -9: node2 rejoined as node1's synchronous standby" "node1 node2" "$(roles)"
how=restart
grep -q 'running pg_rewind' "$ROOT/node2/patroni.log" && how=pg_rewind
grep -q 'reinitializ' "$ROOT/node2/patroni.log" && how=reinitialize
echo "# node2 rejoined after: $how; Patroni on node2 logged: $(grep -o 'Primary crashed. Failing over.' "$ROOT/node2/patroni.log" | head -1)"
reconnected "kill -9" "$t"
after_failover "kill -9" 1 "$t"

# --- the end: stop the clients, the figures -----------------------------------
touch "$RUN/stop"
for pid in "${client_pids[@]}"; do
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
done
client_pids=()
final=$($PY "$WORKLOAD" summary "$RUN")
val() { awk -v n="$1" '$1 == n { print $2 }' <<<"$final"; }
verified=$(timeout 60 $PY "$WORKLOAD" verify "$RUN" 2>&1)
check "every acknowledged INSERT ($(awk '$1 == "checked" { print $2 }' <<<"$verified"), resource and table scope) is on the final primary" \
    0 "$(awk '$1 == "missing" { print $2 }' <<<"$verified")"
check "failovers done" 2 "$failovers"
check "HWM regressions" 0 "$regressions"
check "lease tokens issued twice (whole run)" 0 "$(val lease_duplicates)"
check "lease tokens out of issue order (whole run)" 0 "$(val lease_order_violations)"
check "fresh writes refused" 0 "$(val refused)"
echo "# failovers: $failovers; writes acknowledged: $(val writes); HWM regressions: $regressions;" \
    "lease tokens issued: $(val lease_tokens), duplicates: $(val lease_duplicates);" \
    "outcomes unknown (connection lost before the commit returned, not counted): $(val lost);" \
    "other errors (retried on a new connection): $(val errors)"
finish
