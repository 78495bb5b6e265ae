#!/usr/bin/env bash
# ALTER EXTENSION fencing UPDATE with state in place: install the frozen 1.0
# SQL (with the current library, as after a package upgrade), make state in
# every scope, update to the current version, then check that every HWM,
# tombstone, policy, namespace owner and guard is intact and that stale writes
# are refused. Runs in a database of its own on the scratch cluster of
# test/run-all.sh (libpq environment already exported). Prints "ok N - ..."
# lines and a summary line.
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/lib/checks.sh
DB=fencing_extupdate
psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1;
      psql -X -q -d postgres -c "DROP ROLE IF EXISTS extupdate_team" >/dev/null 2>&1' EXIT
export PGDATABASE=$DB
q() { psql -X -At -q -c "$1" 2>&1; }
sqlstate() { sqlstate_of "$1"; }
current=$(sed -n "s/^default_version = '\(.*\)'/\1/p" fencing.control)

psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION fencing VERSION '1.0';
CREATE ROLE extupdate_team;
-- row scope, text key: a live row and a tombstone
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10), ('b', 1, 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM inventory WHERE item = 'b'; COMMIT;
-- row scope, char(5) key: 1.0 keyed its tombstones by the padded bytes
CREATE TABLE codes (code char(5) PRIMARY KEY, fence fencing_token);
INSERT INTO codes VALUES ('ab', 40);
BEGIN; SET LOCAL fencing.token = 45; DELETE FROM codes WHERE code = 'ab'; COMMIT;
-- ... as the 1.0 library wrote them: 'cd' padded to 'cd   '
INSERT INTO fencing.row_tombstone VALUES ('codes'::regclass, ARRAY['6364202020'], 47);
-- resource scope, in a namespace owned by a role
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
ALTER TABLE orders OWNER TO extupdate_team;
SET ROLE extupdate_team;
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'extupdate');
RESET ROLE;
INSERT INTO orders VALUES (1, 's', 50);
-- table scope, strict
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table', strict => true);
INSERT INTO ledger VALUES (1, 60);
-- row scope, partitioned
CREATE TABLE events (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE events_a PARTITION OF events FOR VALUES IN ('a');
INSERT INTO events VALUES (1, 'a', 70), (2, 'a', 70);
BEGIN; SET LOCAL fencing.token = 75; DELETE FROM events WHERE id = 2; COMMIT;
SQL

policies_before=$(q "SELECT string_agg(table_name || ':' || scope || ':' || strict, ' ' ORDER BY table_name::text) FROM fencing_protected")
hwms_before=$(q "SELECT fencing_high_water('inventory', '{\"item\": \"a\"}') || ' ' ||
                        fencing_high_water('inventory', '{\"item\": \"b\"}') || ' ' ||
                        fencing_resource_high_water('s', 'extupdate') || ' ' ||
                        fencing_high_water('ledger') || ' ' ||
                        fencing_high_water('events', '{\"id\": 2, \"k\": \"a\"}')")
check "1.0 installed with state in every scope" "1.0|10 30 50 60 75" \
    "$(q "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")|$hwms_before"

out=$(psql -X -q -c "ALTER EXTENSION fencing UPDATE" 2>&1)
check "ALTER EXTENSION fencing UPDATE succeeds" "" "$(echo "$out" | grep -E 'ERROR' | head -1)"
check "now at the current version" "$current" \
    "$(q "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")"
check "policies intact" "$policies_before" \
    "$(q "SELECT string_agg(table_name || ':' || scope || ':' || strict, ' ' ORDER BY table_name::text) FROM fencing_protected")"
check "HWMs and tombstones intact" "$hwms_before" \
    "$(q "SELECT fencing_high_water('inventory', '{\"item\": \"a\"}') || ' ' ||
                 fencing_high_water('inventory', '{\"item\": \"b\"}') || ' ' ||
                 fencing_resource_high_water('s', 'extupdate') || ' ' ||
                 fencing_high_water('ledger') || ' ' ||
                 fencing_high_water('events', '{\"id\": 2, \"k\": \"a\"}')")"
check "char(n) tombstones: the new form kept, 1.0's padded form re-keyed" "45 47" \
    "$(q "SELECT fencing_high_water('codes', '{\"code\": \"ab\"}') || ' ' || fencing_high_water('codes', '{\"code\": \"cd\"}')")"
check "namespace owner kept, by role OID" "extupdate|extupdate_team|regrole" \
    "$(q "SELECT name || '|' || owner || '|' || pg_typeof(owner) FROM fencing.resource_namespace")"
check "every guard re-installed as an ordinary trigger (guard_ok)" "5" \
    "$(q "SELECT count(*) FROM fencing_protected WHERE guard_ok")"
check "no internal fencing trigger left" "0" \
    "$(q "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_%' AND tgisinternal")"
check "fencing_verify_guards() finds nothing" "0" "$(q "SELECT count(*) FROM fencing_verify_guards()")"
check "stale UPDATE refused (row scope)" "TF001" \
    "$(sqlstate "UPDATE inventory SET fence = 9 WHERE item = 'a'")"
check "stale re-INSERT of a deleted key refused (tombstone)" "TF001" \
    "$(sqlstate "INSERT INTO inventory VALUES ('b', 1, 25)")"
check "stale re-INSERT of a deleted char(n) key refused (1.0's tombstone)" "TF001" \
    "$(sqlstate "INSERT INTO codes VALUES ('cd', 46)")"
check "stale key move onto a deleted key refused" "TF001" \
    "$(sqlstate "UPDATE inventory SET item = 'b', fence = 20 WHERE item = 'a'")"
check "stale write refused (resource scope)" "TF001" \
    "$(sqlstate "INSERT INTO orders VALUES (2, 's', 49)")"
check "equal token refused (table scope, strict)" "TF001" \
    "$(sqlstate "INSERT INTO ledger VALUES (2, 60)")"
check "stale re-INSERT refused (partition)" "TF001" \
    "$(sqlstate "INSERT INTO events VALUES (2, 'a', 74)")"
check "stale re-INSERT after TRUNCATE refused" "TF001" \
    "$(sqlstate "BEGIN; TRUNCATE inventory; INSERT INTO inventory VALUES ('a', 1, 9); COMMIT")"
check "fresh tokens admitted" "1|1" \
    "$(q "SELECT fenced_update('inventory', 31, '{\"item\": \"a\"}', '{\"stock\": 2}')")|$(q "SELECT fenced_update('ledger', 61, '{\"id\": 1}', '{}')")"

# 1.1 -> 1.2 (statistics) with 1.1's state in place: leases, resource and
# table HWMs, policies; the new views answer over it.
psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${DB}_11" -c "CREATE DATABASE ${DB}_11" >/dev/null
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1;
      psql -X -q -d postgres -c "DROP DATABASE IF EXISTS ${DB}_11" >/dev/null 2>&1;
      psql -X -q -d postgres -c "DROP ROLE IF EXISTS extupdate_team" >/dev/null 2>&1' EXIT
export PGDATABASE=${DB}_11
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION fencing VERSION '1.1';
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10);
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
INSERT INTO orders VALUES (1, 's', 50);
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
INSERT INTO ledger VALUES (1, 60);
SELECT fencing_acquire('s', 'holder-a', '1 hour');
SQL
state_11="SELECT (SELECT string_agg(table_name || ':' || scope, ' ' ORDER BY table_name::text) FROM fencing_protected)
                 || '|' || fencing_high_water('inventory', '{\"item\": \"a\"}') || ' ' || fencing_resource_high_water('s')
                 || ' ' || fencing_high_water('ledger')
                 || '|' || (SELECT string_agg(resource || ':' || holder || ':' || token || ':' || live, ' ') FROM fencing_leases)"
before=$(q "$state_11")
check "1.1 installed with state (policies, HWMs, a live lease)" "1.1|inventory:row ledger:table orders:resource|10 51 60|s:holder-a:51:true" \
    "$(q "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")|$before"
out=$(psql -X -q -c "ALTER EXTENSION fencing UPDATE TO '1.2'" 2>&1)
check "ALTER EXTENSION fencing UPDATE TO '1.2' succeeds" "" "$(echo "$out" | grep -E 'ERROR' | head -1)"
check "1.1 -> 1.2: state intact" "$before" "$(q "$state_11")"
check "1.1 -> 1.2: fencing_stats lists the protected tables and the namespace" \
    "namespace:default table:inventory table:ledger table:orders" \
    "$(q "SELECT string_agg(kind || ':' || coalesce(table_name::text, namespace), ' ' ORDER BY kind, table_name::text) FROM fencing_stats")"
check "1.1 -> 1.2: fencing_lease_stats shows the lease's current token" "s:51:true" \
    "$(q "SELECT string_agg(resource || ':' || current_token || ':' || live, ' ') FROM fencing_lease_stats")"
check "1.1 -> 1.2: stale writes still refused" "TF001|TF001" \
    "$(sqlstate "UPDATE inventory SET fence = 9 WHERE item = 'a'")|$(sqlstate "INSERT INTO orders VALUES (2, 's', 49)")"
check "1.1 -> 1.2: fencing_stats_reset() not granted to PUBLIC" "f" \
    "$(q "SELECT has_function_privilege('public', 'fencing_stats_reset()', 'EXECUTE')")"
check "1.1 -> 1.2 and 1.0 -> 1.2 give the same objects" \
    "$(psql -X -At -d "$DB" -c "SELECT string_agg(pg_describe_object(classid, objid, objsubid), ',' ORDER BY 1) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'")" \
    "$(q "SELECT string_agg(pg_describe_object(classid, objid, objsubid), ',' ORDER BY 1) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'")"
finish
