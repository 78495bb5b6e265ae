#!/usr/bin/env bash
# Failover to a synchronous standby: every acknowledged fenced write and HWM
# raise is on the standby when the primary dies, so after promotion stale
# writes are still refused. Its own two scratch clusters (private ports and
# sockets); prints "ok N - ..." lines and a summary line.
set -uo pipefail
cd "$(dirname "$0")/../.."
PGBIN=$(pg_config --bindir)
PPORT=${FENCING_FAILOVER_PORT:-54409}
SPORT=$((PPORT + 1))
ROOT=/tmp/fencing-failover-$PPORT
as_server_user() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
    for d in primary standby; do
        [ -f "$ROOT/$d/postmaster.pid" ] && as_server_user "$PGBIN/pg_ctl" -D "$ROOT/$d" -m immediate stop >/dev/null 2>&1
    done
    rm -rf "$ROOT"
}
cleanup
trap cleanup EXIT
mkdir -p "$ROOT"
[ "$(id -u)" = 0 ] && chown postgres: "$ROOT"
as_server_user mkdir -p "$ROOT/sock"
as_server_user "$PGBIN/initdb" -D "$ROOT/primary" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$ROOT/initdb.log" 2>&1
as_server_user tee -a "$ROOT/primary/postgresql.conf" >/dev/null <<CONF
port = $PPORT
listen_addresses = ''
unix_socket_directories = '$ROOT/sock'
synchronous_standby_names = 'standby1'
synchronous_commit = on
CONF
as_server_user "$PGBIN/pg_ctl" -D "$ROOT/primary" -l "$ROOT/primary.log" -w start >/dev/null
as_server_user "$PGBIN/pg_basebackup" -D "$ROOT/standby" -R -X stream \
    -d "host=$ROOT/sock port=$PPORT user=postgres application_name=standby1" >/dev/null 2>&1
as_server_user sed -i "s/^port = .*/port = $SPORT/" "$ROOT/standby/postgresql.conf"
# Once promoted it stands alone: it must not wait for a standby of its own.
as_server_user sed -i "s/^synchronous_standby_names = .*/synchronous_standby_names = ''/" \
    "$ROOT/standby/postgresql.conf"
as_server_user "$PGBIN/pg_ctl" -D "$ROOT/standby" -l "$ROOT/standby.log" -w start >/dev/null

export PGHOST=$ROOT/sock PGUSER=postgres PGDATABASE=postgres
source test/lib/checks.sh
qp() { psql -X -At -q -p "$PPORT" -c "$1" 2>&1; }
qs() { psql -X -At -q -p "$SPORT" -c "$1" 2>&1; }
sqlstate_s() { sqlstate_of "$1" -p "$SPORT"; }

for _ in $(seq 1 100); do
    [ "$(qp "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")" = sync ] && break
    sleep 0.1
done
check "standby is synchronous" "sync" "$(qp "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")"

psql -X -q -p "$PPORT" -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
INSERT INTO inventory VALUES ('a', 10, 33), ('b', 10, 33);
UPDATE inventory SET stock = 9, fence = 34 WHERE item = 'a';
BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inventory WHERE item = 'b'; COMMIT;
INSERT INTO orders VALUES (1, 's1', 50);
SQL

# The durability rule: a commit that raised an HWM waits for the synchronous
# standby even when the session says synchronous_commit = off or local. With
# the standby down such a commit waits (wait event SyncRep) until cancelled;
# PostgreSQL then warns that it committed locally only. A write that raises
# nothing keeps the session's setting and does not wait.
qp "CREATE TABLE dur (id int PRIMARY KEY, fence fencing_token); INSERT INTO dur VALUES (1, 1)" >/dev/null
as_server_user "$PGBIN/pg_ctl" -D "$ROOT/standby" -m fast -w stop >/dev/null
waits() {  # waits SYNCHRONOUS_COMMIT SQL: 1 when the commit waits for the standby
    psql -X -q -p "$PPORT" -c "SET synchronous_commit = $1" -c "$2" >/dev/null 2>&1 &
    sleep 1
    qp "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
    wait
}
check "raising commit under synchronous_commit = off waits for the standby" "1" \
    "$(waits off "UPDATE dur SET fence = 2 WHERE id = 1")"
check "raising commit under synchronous_commit = local waits for the standby" "1" \
    "$(waits local "UPDATE dur SET fence = 3 WHERE id = 1")"
check "same-token write under synchronous_commit = off does not wait" "0" \
    "$(waits off "UPDATE dur SET fence = 3 WHERE id = 1")"
as_server_user "$PGBIN/pg_ctl" -D "$ROOT/standby" -l "$ROOT/standby.log" -w start >/dev/null
for _ in $(seq 1 100); do
    [ "$(qp "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")" = sync ] && break
    sleep 0.1
done
qp "DROP TABLE dur" >/dev/null

# The last acknowledged raise, immediately before the primary dies.
qp "SELECT fenced_update('inventory', 35, '{\"item\": \"a\"}', '{\"stock\": 8}')" >/dev/null

pid=$(head -1 "$ROOT/primary/postmaster.pid")
pkill -9 -P "$pid"
kill -9 "$pid"
as_server_user "$PGBIN/pg_ctl" -D "$ROOT/standby" -w promote >/dev/null
check "standby promoted" "f" "$(qs 'SELECT pg_is_in_recovery()')"

check "last acknowledged write is on the new primary" "8|35" "$(qs "SELECT stock || '|' || fence FROM inventory WHERE item = 'a'")"
check "tombstone is on the new primary" "40" "$(qs "SELECT fencing_high_water('inventory', '{\"item\": \"b\"}')")"
check "resource HWM is on the new primary" "50" "$(qs "SELECT fencing_resource_high_water('s1')")"
check "policies are on the new primary" "2" "$(qs "SELECT count(*) FROM fencing_protected")"
check "stale UPDATE refused after failover" "TF001" "$(sqlstate_s "UPDATE inventory SET fence = 34 WHERE item = 'a'")"
check "stale re-INSERT refused after failover" "TF001" "$(sqlstate_s "INSERT INTO inventory VALUES ('b', 1, 39)")"
check "stale resource write refused after failover" "TF001" "$(sqlstate_s "INSERT INTO orders VALUES (2, 's1', 49)")"
check "fresh token admitted after failover" "1" "$(qs "SELECT fenced_update('inventory', 36, '{\"item\": \"a\"}', '{\"stock\": 7}')")"

finish
