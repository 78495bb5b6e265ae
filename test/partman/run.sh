#!/usr/bin/env bash
# pg_partman (Debian's postgresql-15-partman, 4.x) managing a fenced table:
# create_parent on a row-scope fenced table, run_maintenance (the partitions
# it creates are fenced), retention that drops expired partitions and
# retention that detaches and keeps them (the expired keys stay fenced under
# the parent), table scope under retention, and pg_partman's template table
# (not fenced automatically). Needs the extension installed (make install)
# and pg_partman; starts its own scratch cluster on PARTMAN_PGPORT. Prints
# "ok N - ..." lines; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
. test/lib/checks.sh

export FENCING_PGPORT=${PARTMAN_PGPORT:-54395}
export FENCING_CLUSTER_DIR=/tmp/fencing-partman-$FENCING_PGPORT
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start || { echo "not ok 1 - scratch cluster starts"; exit 1; }
eval "$(test/cluster.sh env)"
export PGOPTIONS="-c client_min_messages=warning"

q() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1" 2>&1; }
# with_token N SQL: SQL in one transaction with fencing.token = N.
with_token() { q "SELECT set_config('fencing.token', '$1', true); $2" >/dev/null; }
stale_of() { sqlstate_of "SELECT set_config('fencing.token', '$1', true); $2"; }
partitions() { q "SELECT string_agg(c.relname, ' ' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '$1'::regclass"; }

check "extensions install" "" \
    "$(q "CREATE EXTENSION fencing; CREATE SCHEMA partman; CREATE EXTENSION pg_partman SCHEMA partman;" | grep -v '^$')"
check "pg_partman is 4.x" "4" "$(q "SELECT split_part(extversion, '.', 1) FROM pg_extension WHERE extname = 'pg_partman'")"

# --- row scope, retention that drops ------------------------------------------
q "CREATE TABLE pm (id bigint PRIMARY KEY, v int, fence fencing_token) PARTITION BY RANGE (id)" >/dev/null
check "pm fenced in row scope" "row" "$(q "SELECT scope FROM fencing_protected WHERE table_name = 'pm'::regclass")"
check "create_parent" "t" \
    "$(q "SELECT partman.create_parent('public.pm', 'id', 'native', '100', p_premake := 2, p_start_partition := '0')")"
check "create_parent made partitions and a default" "pm_default pm_p0 pm_p100 pm_p200" "$(partitions pm)"
check "every guard in place" "0" "$(q "SELECT count(*) FROM fencing_verify_guards() WHERE table_name::text NOT LIKE 'partman.template\\_%'")"
check "fencing_verify_guards lists the template table (a token column, no policy, no rows)" "1" \
    "$(q "SELECT count(*) FROM fencing_verify_guards() WHERE table_name::text = 'partman.template_public_pm' AND problem LIKE '%not fenced%'")"
check "the template table exists" "1" \
    "$(q "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'partman' AND c.relname = 'template_public_pm'")"
check "the template table is not shown as a fenced table" "pm" \
    "$(q "SELECT string_agg(table_name::text, ' ' ORDER BY table_name::text) FROM fencing_protected")"

with_token 10 "INSERT INTO pm SELECT g, 0, 10 FROM generate_series(1, 299) g"
with_token 50 "UPDATE pm SET v = 1 WHERE id IN (5, 105)"
with_token 60 "DELETE FROM pm WHERE id = 6"

# run_maintenance premakes partitions ahead of the highest value.
check "run_maintenance" "" "$(q "SELECT partman.run_maintenance('public.pm')")"
check "run_maintenance made new partitions" "pm_default pm_p0 pm_p100 pm_p200 pm_p300 pm_p400" "$(partitions pm)"
check "new partitions are guarded" "0" "$(q "SELECT count(*) FROM fencing_verify_guards() WHERE table_name::text NOT LIKE 'partman.template\\_%'")"
with_token 70 "INSERT INTO pm SELECT g, 0, 70 FROM generate_series(300, 420) g"
with_token 80 "UPDATE pm SET v = 2 WHERE id = 305"
check "a stale write into a new partition is refused" "TF001" "$(stale_of 79 "UPDATE pm SET v = -1 WHERE id = 305")"
check "a stale write into a new partition directly is refused" "TF001" "$(stale_of 79 "UPDATE pm_p300 SET v = -1 WHERE id = 305")"
check "a stale re-insert of a deleted key is refused" "TF001" "$(stale_of 59 "INSERT INTO pm VALUES (6, -1, 59)")"

# Retention 150 with the highest value at 420: partitions entirely below 270 expire.
q "UPDATE partman.part_config SET retention = '150', retention_keep_table = false WHERE parent_table = 'public.pm'" >/dev/null
check "run_maintenance" "" "$(q "SELECT partman.run_maintenance('public.pm')")"
parts=$(partitions pm)
check "retention dropped pm_p0 and pm_p100" "0" "$(q "SELECT count(*) FROM pg_class WHERE relname IN ('pm_p0', 'pm_p100')")"
check "the newer partitions stay" "t" "$( [[ "$parts" == *pm_p200*pm_p300* ]] && echo t || echo "$parts")"
check "stale re-insert of a dropped raised key (5 at 49 < 50) refused" "TF001" "$(stale_of 49 "INSERT INTO pm VALUES (5, -1, 49)")"
check "stale re-insert of a dropped key (7 at 9 < 10) refused" "TF001" "$(stale_of 9 "INSERT INTO pm VALUES (7, -1, 9)")"
check "stale re-insert in the second dropped partition (105 at 49) refused" "TF001" "$(stale_of 49 "INSERT INTO pm VALUES (105, -1, 49)")"
check "the deleted key's tombstone survives the drop (6 at 59)" "TF001" "$(stale_of 59 "INSERT INTO pm VALUES (6, -1, 59)")"
check "a fresh re-insert (5 at 51) is accepted" "" "$(stale_of 51 "INSERT INTO pm VALUES (5, 1, 51)")"
check "it landed in the default partition" "pm_default" "$(q "SELECT tableoid::regclass FROM pm WHERE id = 5")"

# managed_table NAME SCOPE RAISE_SQL KEEP: a table under pg_partman with rows
# 1-420 at 10 (RAISE_SQL raises some at 50 or 90), partitions up to 499,
# then one retention run (150, retention_keep_table = KEEP).
managed_table() {
    q "CREATE TABLE $1 (id bigint PRIMARY KEY, v int, fence fencing_token) PARTITION BY RANGE (id)" >/dev/null
    [ "$2" = row ] || q "SELECT fencing_protect('$1', scope => '$2')" >/dev/null
    q "SELECT partman.create_parent('public.$1', 'id', 'native', '100', p_premake := 2, p_start_partition := '0')" >/dev/null
    with_token 10 "INSERT INTO $1 SELECT g, 0, 10 FROM generate_series(1, 299) g"
    with_token "${3%% *}" "${3#* }"
    check "run_maintenance ($1)" "" "$(q "SELECT partman.run_maintenance('public.$1')")"
    with_token 10 "INSERT INTO $1 SELECT g, 0, 10 FROM generate_series(300, 420) g"
    q "UPDATE partman.part_config SET retention = '150', retention_keep_table = $4 WHERE parent_table = 'public.$1'" >/dev/null
    check "retention run ($1)" "" "$(q "SELECT partman.run_maintenance('public.$1')")"
}

# --- row scope, retention that detaches and keeps -----------------------------
managed_table pk row "50 UPDATE pk SET v = 1 WHERE id IN (5, 105)" true
check "retention detached pk_p0 and pk_p100 and kept them" "2 0" \
    "$(q "SELECT count(*) || ' ' || count(*) FILTER (WHERE relispartition) FROM pg_class WHERE relname IN ('pk_p0', 'pk_p100')")"
check "the detached tables keep their rows" "199" "$(q "SELECT (SELECT count(*) FROM pk_p0) + (SELECT count(*) FROM pk_p100)")"
check "stale re-insert of a detached raised key refused" "TF001" "$(stale_of 49 "INSERT INTO pk VALUES (5, -1, 49)")"
check "stale re-insert of a detached key refused" "TF001" "$(stale_of 9 "INSERT INTO pk VALUES (150, -1, 9)")"
check "a detached table stays fenced on its own" "TF001" "$(stale_of 49 "UPDATE pk_p0 SET v = -1 WHERE id = 5")"
check "a fresh re-insert is accepted" "" "$(stale_of 11 "INSERT INTO pk VALUES (150, 1, 11)")"

# --- table scope under retention ----------------------------------------------
managed_table pt table "90 UPDATE pt SET v = 1 WHERE id = 5" false
check "table scope: retention dropped pt_p0" "0" "$(q "SELECT count(*) FROM pg_class WHERE relname = 'pt_p0'")"
check "table scope: the HWM stays" "90" "$(q "SELECT fencing_high_water('pt')")"
check "table scope: a stale write is refused" "TF001" "$(stale_of 89 "INSERT INTO pt VALUES (5, -1, 89)")"

check "the template tables are not shown as fenced tables" "pk pk_p0 pk_p100 pm pt" \
    "$(q "SELECT string_agg(table_name::text, ' ' ORDER BY table_name::text) FROM fencing_protected")"
check "every guard in place at the end" "0" "$(q "SELECT count(*) FROM fencing_verify_guards() WHERE table_name::text NOT LIKE 'partman.template\\_%'")"
finish
