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
check "dumped guards replaced by the policies' own: every guard in place" "3" \
    "$(q $DST "SELECT count(*) FROM fencing_protected WHERE guard_ok")"
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


# pg_dump -t of one table carries its guard triggers but neither fencing's
# policies nor its HWMs. Restored into a database with the extension:
# a fencing_token table is fenced again (auto-protection, row scope, with a
# WARNING that the dumped policy differs); a bigint-token table has no policy
# there, so its dumped guard is dropped with a WARNING: never silently unfenced,
# never listed while unfenced.
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DST" -c "CREATE DATABASE $DST" >/dev/null
q $DST "CREATE EXTENSION fencing" >/dev/null
pg_dump -d $SRC -t ledger -f "$WORK/ledger.sql"
pg_dump -d $SRC -t orders -f "$WORK/orders.sql"
out=$(psql -X -q -d $DST -f "$WORK/ledger.sql" 2>&1 >/dev/null)
check "pg_dump -t: restoring a fencing_token table warns that its dumped policy is not restored" "yes" \
    "$(grep -q 'keeps its policy in this database (row scope), not the one of the guard being created (table scope)' <<<"$out" && echo yes || echo no)"
check "pg_dump -t: the table is listed, fenced (auto-protected) and its guards in place" "row|true" \
    "$(q $DST "SELECT scope || '|' || guard_ok FROM fencing_protected WHERE table_name = 'ledger'::regclass")"
check "pg_dump -t: a stale write to it is refused (row HWM)" "TF001" \
    "$(sqlstate $DST "UPDATE ledger SET fence = 1 WHERE id = 2")"
out=$(psql -X -q -d $DST -f "$WORK/orders.sql" 2>&1 >/dev/null)
check "pg_dump -t: a table without a policy here: its dumped guard is dropped, with a WARNING" "yes" \
    "$(grep -q 'WARNING:  table public.orders is not fenced: it has no fencing policy in this database' <<<"$out" && echo yes || echo no)"
check "pg_dump -t: ... and it is neither listed as fenced nor carries a guard" "0 0" \
    "$(q $DST "SELECT (SELECT count(*) FROM fencing_protected WHERE table_name = 'orders'::regclass) || ' ' || (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'orders'::regclass)")"

# pg_restore --disable-triggers (data-only, superuser): DISABLE TRIGGER ALL on a
# fenced table is refused, so the data loads with the guards on and rows below
# a restored HWM are refused (fail closed); every listed table keeps its guard.
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DST" -c "CREATE DATABASE $DST" >/dev/null
pg_dump -d $SRC -Fc -f "$WORK/dump.custom"
pg_restore -d $DST --schema-only "$WORK/dump.custom" 2>"$WORK/schema.err"
check "pg_restore --schema-only: no errors (a guard waiting for its policy only warns)" "" \
    "$(grep -v WARNING "$WORK/schema.err" | grep -v '^DETAIL\|^HINT' )"
pg_restore -d $DST --data-only --disable-triggers "$WORK/dump.custom" 2>"$WORK/data.err"
check "pg_restore --disable-triggers: disabling a guard is refused, reported" "yes" \
    "$(grep -q 'cannot disable the fencing guard of table public.inventory' "$WORK/data.err" && echo yes || echo no)"
check "pg_restore --disable-triggers: every listed table keeps its guard" "inventory|true ledger|true orders|true" \
    "$(q $DST "SELECT string_agg(table_name || '|' || guard_ok, ' ' ORDER BY table_name::text) FROM fencing_protected")"
check "pg_restore --disable-triggers: stale re-INSERT of a deleted key still refused" "TF001" \
    "$(sqlstate $DST "INSERT INTO inventory VALUES ('b', 1, 25)")"

finish
