#!/usr/bin/env bash
# pg_dump / restore round trip against the running scratch cluster (PG* env).
# Policies, guards, HWMs (resource, table, tombstones) and renamed columns must
# survive a dump restored with session_replication_role = replica, and stale
# writes must still be refused afterwards. Prints "ok N - ..." / "not ok N - ..."
# lines and ends with "N passed, N failed" for this suite.
set -uo pipefail
SRC=fencing_dump_src
DST=fencing_dump_dst
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $SRC" -c "DROP DATABASE IF EXISTS $DST" >/dev/null 2>&1' EXIT
cd "$(dirname "$0")/../.."
source test/lib/checks.sh
q() { psql -X -At -q -v ON_ERROR_STOP=1 -d "$1" -c "$2" 2>&1; }
sqlstate() { sqlstate_of "$2" -d "$1"; }

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $SRC" -c "DROP DATABASE IF EXISTS $DST" \
    -c "CREATE DATABASE $SRC" -c "CREATE DATABASE $DST" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $SRC >/dev/null <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10), ('b', 1, 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM inventory WHERE item = 'b'; COMMIT;
ALTER TABLE inventory RENAME COLUMN fence TO epoch;
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence bigint);
SELECT fencing_protect('orders', token_column => 'fence', scope => 'resource',
                       resource_column => 'shard', strict => true);
INSERT INTO orders VALUES (1, 's', 5), (2, 's', 6);
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table', on_stale => 'skip');
INSERT INTO ledger VALUES (1, 7), (2, 8);
SQL
pg_dump -d $SRC -f "$WORK/dump.sql" || { echo "not ok - pg_dump failed"; echo "0 passed, 1 failed"; exit 1; }
restore=$(PGOPTIONS='-c session_replication_role=replica' psql -X -q -v ON_ERROR_STOP=1 -d $DST -f "$WORK/dump.sql" 2>&1 >/dev/null)
check "restore with session_replication_role=replica succeeds" "" "$restore"

check "policies restored" \
    "inventory|epoch|row|f|error ledger|fence|table|f|skip orders|fence|resource|t|error" \
    "$(q $DST "SELECT string_agg(format('%s|%s|%s|%s|%s', table_name, token_column, scope, strict, on_stale), ' ' ORDER BY table_name::text) FROM fencing_protected")"
check "one guard per protected table" "3" \
    "$(q $DST "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_guard_%'")"
check "rows restored" "1 2 2" \
    "$(q $DST "SELECT (SELECT count(*) FROM inventory) || ' ' || (SELECT count(*) FROM orders) || ' ' || (SELECT count(*) FROM ledger)")"
check "tombstone HWM restored" "30" "$(q $DST "SELECT fencing_high_water('inventory', '{\"item\": \"b\"}')")"
check "resource HWM restored" "6" "$(q $DST "SELECT fencing_resource_high_water('s')")"
check "table HWM restored" "8" "$(q $DST "SELECT fencing_high_water('ledger')")"
check "stale re-INSERT of a deleted key refused after restore" "TF001" \
    "$(sqlstate $DST "INSERT INTO inventory VALUES ('b', 1, 25)")"
check "strict resource policy enforced after restore" "TF001" \
    "$(sqlstate $DST "INSERT INTO orders VALUES (3, 's', 6)")"
check "renamed token column enforced after restore" "TF001" \
    "$(sqlstate $DST "UPDATE inventory SET epoch = 9 WHERE item = 'a'")"
check "fresh token admitted after restore" "1" \
    "$(q $DST "SELECT fenced_update('inventory', 31, '{\"item\": \"a\"}', '{\"stock\": 2}')")"
check "on_stale skip kept: stale table-scope write skipped" "0" \
    "$(q $DST "WITH w AS (INSERT INTO ledger VALUES (3, 1) RETURNING 1) SELECT count(*) FROM w")"

# A plain restore (triggers active while data loads) fails closed: rows older
# than an already-restored HWM are refused, never silently accepted.
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DST" -c "CREATE DATABASE $DST" >/dev/null
psql -X -q -d $DST -f "$WORK/dump.sql" >/dev/null 2>"$WORK/plain.err"
check "plain restore refuses, rather than accepts, rows below a restored HWM" "yes" \
    "$(grep -q 'stale fencing token' "$WORK/plain.err" && echo yes || echo no)"

finish
