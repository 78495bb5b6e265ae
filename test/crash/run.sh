#!/usr/bin/env bash
# kill -9 durability: acknowledged fenced writes and their HWM raises (row
# tokens, tombstones, resource and table HWMs) survive an immediate crash of the
# whole server, and stale writes are still refused after crash recovery.
# Uses its own scratch cluster. Prints "ok N - ..." lines and a summary line.
set -uo pipefail
cd "$(dirname "$0")/../.."
export FENCING_PGPORT=${FENCING_CRASH_PGPORT:-54399}
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
DATA=/tmp/fencing-cluster-$FENCING_PGPORT/data
source test/lib/checks.sh
q() { psql -X -At -q -c "$1" 2>&1; }
sqlstate() { sqlstate_of "$1"; }

psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 10, 33), ('b', 10, 33);
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
SQL
# Acknowledged (committed) writes, each raising an HWM ...
q "UPDATE inventory SET stock = 9, fence = 34 WHERE item = 'a'" >/dev/null
q "BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inventory WHERE item = 'b'; COMMIT;" >/dev/null
q "INSERT INTO orders VALUES (1, 's1', 50)" >/dev/null
q "INSERT INTO ledger VALUES (1, 60)" >/dev/null
# ... and one in flight when the server dies: never acknowledged, must vanish.
psql -X -q -c "BEGIN; UPDATE inventory SET fence = 99 WHERE item = 'a'; SELECT pg_sleep(30);" >/dev/null 2>&1 &
sleep 1

pid=$(head -1 "$DATA/postmaster.pid")
# The whole server at once: every backend and the postmaster.
pkill -9 -P "$pid"
kill -9 "$pid"
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
while pgrep -P "$pid" >/dev/null 2>&1; do sleep 0.1; done
rm -f "$DATA/postmaster.pid"
test/cluster.sh start
check "server recovered after kill -9" "1" "$(q 'SELECT 1')"

check "row token survived" "34" "$(q "SELECT fence FROM inventory WHERE item = 'a'")"
check "tombstone survived" "40" "$(q "SELECT fencing_high_water('inventory', '{\"item\": \"b\"}')")"
check "resource HWM survived" "50" "$(q "SELECT fencing_resource_high_water('s1')")"
check "table HWM survived" "60" "$(q "SELECT fencing_high_water('ledger')")"
check "stale UPDATE refused after recovery" "TF001" "$(sqlstate "UPDATE inventory SET fence = 33 WHERE item = 'a'")"
check "stale re-INSERT refused after recovery" "TF001" "$(sqlstate "INSERT INTO inventory VALUES ('b', 1, 39)")"
check "stale resource write refused after recovery" "TF001" "$(sqlstate "INSERT INTO orders VALUES (2, 's1', 49)")"
check "unacknowledged in-flight write did not survive" "34" "$(q "SELECT fence FROM inventory WHERE item = 'a'")"

finish
