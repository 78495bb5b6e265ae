#!/usr/bin/env bash
# Install-time security (PostgreSQL docs 38.17.6, the CVE-2020-14350 lessons).
#
# sec_trojan, an unprivileged role with CREATE on public, plants trojan
# operators, functions, aggregates and domains in public (trojans.sql) and,
# inside the installing superuser's own session, views, domains, functions and
# an operator in pg_temp (temp_trojans.sql). The superuser then runs, with a
# search path that puts public and pg_temp before pg_catalog:
#   A. CREATE EXTENSION fencing (1.0, then every update script);
#   B. ALTER EXTENSION fencing UPDATE from 1.0, with state in every scope
#      (so 1.1's tombstone re-keying loop and guard re-installation run);
#   C. CREATE EXTENSION / ALTER EXTENSION UPDATE where sec_trojan created an
#      object under a name the scripts create: the command must fail rather
#      than adopt it.
# Then, in A, the superuser and sec_trojan use the extension (fenced writes in
# every scope, fenced DML, leases, advance, resets, DDL that fires the
# extension's SECURITY DEFINER event triggers, on tables of sec_trojan's with
# trojan defaults, checks, index expressions, domains and RLS).
# Every trojan records who ran it; none may run during A, B or C, none may
# ever run as anyone but sec_trojan, and sec_trojan gains nothing. Last, every
# SECURITY DEFINER function of the extension pins search_path ending in
# pg_temp and is not executable by PUBLIC.
#
# Runs on the scratch cluster of test/run-all.sh (libpq environment exported;
# by hand: eval "$(test/cluster.sh env)"). Prints "ok N - ..." lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/lib/checks.sh
HERE=test/security
current=$(sed -n "s/^default_version = '\(.*\)'/\1/p" fencing.control)
DBS="fencing_sec_create fencing_sec_update fencing_sec_squat"

cleanup() {
    for db in $DBS; do
        psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
    done
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS sec_trojan" >/dev/null 2>&1
}
cleanup
trap cleanup EXIT
psql -X -q -d postgres -c "CREATE ROLE sec_trojan NOLOGIN" >/dev/null
for db in $DBS; do
    psql -X -q -d postgres -c "CREATE DATABASE $db" >/dev/null
    psql -X -q -d $db -c "GRANT CREATE ON SCHEMA public TO sec_trojan" >/dev/null
done

q() {  # q DB SQL: one value. The test's own queries reach no trojan either:
    # pg_catalog alone (pg_temp last), the extension's functions qualified.
    psql -X -At -q -d "$1" -c "SET search_path = pg_catalog, pg_temp" -c "$2" 2>&1
}
# The installing session: temp trojans, a hostile search path, the command.
hostile_session() {  # hostile_session DB SQL...: output (WARNINGs included)
    local db=$1
    shift
    {
        cat "$HERE/temp_trojans.sql"
        echo "SET search_path = public, pg_temp, pg_catalog;"
        for sql in "$@"; do echo "$sql"; done
    } | psql -X -q -v ON_ERROR_STOP=1 -d "$db" 2>&1
    echo "exit $?"
}
privileges_of_trojan() {  # what sec_trojan may do: must stay the same
    q "$1" "SELECT r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolbypassrls,
                   (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid),
                   (SELECT count(*) FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
                     AND e.extname = 'fencing' JOIN pg_class c ON d.classid = 'pg_class'::regclass
                     AND c.oid = d.objid WHERE c.relowner = r.oid)
                 + (SELECT count(*) FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
                     AND e.extname = 'fencing' JOIN pg_proc p ON d.classid = 'pg_proc'::regclass
                     AND p.oid = d.objid WHERE p.proowner = r.oid),
                   has_schema_privilege(r.oid, 'fencing', 'USAGE'),
                   (SELECT e.extowner = r.oid FROM pg_extension e WHERE e.extname = 'fencing')
              FROM pg_roles r WHERE r.rolname = 'sec_trojan'"
}
none="f|0|0|f|f"
traces() { q "$1" "SELECT count(*) || ' ' || coalesce(string_agg(DISTINCT what || ' as ' || run_as, '; '), '') FROM public.trojan_log ${2:-}"; }

# ---------------------------------------------------------------- A: CREATE
DB=fencing_sec_create
psql -X -q -v ON_ERROR_STOP=1 -d $DB -f "$HERE/trojans.sql" >/dev/null
planted=$(q $DB "SELECT count(*) FROM pg_proc WHERE proowner = 'sec_trojan'::regrole")
ops=$(q $DB "SELECT count(*) FROM pg_operator WHERE oprowner = 'sec_trojan'::regrole")
types=$(q $DB "SELECT count(*) FROM pg_type WHERE typowner = 'sec_trojan'::regrole AND typtype = 'd'")
echo "# planted in public: $planted functions, $ops operators, $types domains;" \
     "in the installing session's pg_temp (temp_trojans.sql): 18 views, 14 domains, 3 functions, 1 operator"
check "trojans planted in public: functions, operators, domains" "yes" \
    "$([ "$planted" -gt 50 ] && [ "$ops" -ge 35 ] && [ "$types" -ge 15 ] && echo yes || echo "$planted $ops $types")"
# The trojans fire when the search path picks them: the test can fail.
# (As sec_trojan, so that the probe escalates nothing.)
probe=$(psql -X -At -q -d $DB -c "SET ROLE sec_trojan" -c "SET search_path = public, pg_catalog" \
            -c "SELECT 'x'::text = 'x'::text" 2>&1)
check "a trojan fires when a path reaches it (the test's own probe)" \
    "t|domain public.text as sec_trojan; operator = (text, text) as sec_trojan" \
    "$probe|$(traces $DB | cut -d' ' -f2-)"
q $DB "DELETE FROM public.trojan_log" >/dev/null

out=$(hostile_session $DB "CREATE EXTENSION fencing;")
check "A: CREATE EXTENSION succeeds next to the trojans" "exit 0|$current" \
    "$(echo "$out" | tail -1)|$(q $DB "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")"
check "A: no trojan ran during CREATE EXTENSION (log, warnings)" "0 |0" \
    "$(traces $DB)|$(echo "$out" | grep -c 'TROJAN RAN')"
check "A: sec_trojan gained nothing" "$none" "$(privileges_of_trojan $DB)"

# Use of the extension, as the superuser (its own SQL pg_catalog-first; the
# extension's must not reach public's or pg_temp's objects either) ...
out=$(hostile_session $DB "CREATE SCHEMA su_app; SET search_path = su_app, pg_catalog, public, pg_temp;
CREATE TABLE su_row (id int8 PRIMARY KEY, name text, note text, fence fencing_token);
CREATE TABLE su_res (id int8 PRIMARY KEY, res text, fence fencing_token);
SELECT fencing_protect('su_res', scope => 'resource', resource_column => 'res');
CREATE TABLE su_tab (id int8 PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('su_tab', scope => 'table', strict => true);
INSERT INTO su_row VALUES (1, 'a', 'n', 10), (2, 'b', 'n', 10);
INSERT INTO su_res VALUES (1, 'r', 10);
INSERT INTO su_tab VALUES (1, 10);
BEGIN; SET LOCAL fencing.token = 11; UPDATE su_row SET note = 'x' WHERE id = 1;
  DELETE FROM su_row WHERE id = 2; UPDATE su_res SET fence = 11; UPDATE su_tab SET fence = 11; COMMIT;
SELECT fenced_update('su_row', 12, '{\"id\": 1}', '{\"note\": \"y\"}');
SELECT fenced_upsert('su_row', 12, '{\"id\": 3, \"name\": \"c\"}');
SELECT fenced_delete('su_row', 12, '{\"id\": 3}');
SELECT fencing_high_water('su_row', '{\"id\": 2}'), fencing_resource_high_water('r');
SELECT fencing_acquire('lease-1', 'me', '1 min'), fencing_renew('lease-1', 1, '1 min');
SELECT fencing_release('lease-1', 1), fencing_resource_advance('r', 20), fencing_advance('su_tab', 20);
SELECT fencing_advance('su_row', 20, '{\"id\": 1}'), fencing_reset('su_row', '{\"id\": 2}');
SELECT fencing_resource_reset('r'), count(*) FROM fencing_verify_guards(true);
SELECT count(*) FROM fencing_protected; SELECT count(*) FROM fencing_leases;
TRUNCATE su_row; ALTER TABLE su_row ADD COLUMN extra text; ALTER TABLE su_row RENAME COLUMN extra TO extra2;
DROP TABLE su_tab; SELECT fencing_unprotect('su_res');")
check "A: the superuser's use of the extension works" "exit 0" "$(echo "$out" | tail -1)"
check "A: ... and runs no trojan" "0 |0" "$(traces $DB)|$(echo "$out" | grep -c 'TROJAN RAN')"

# ... and as sec_trojan, whose tables carry trojans of their own: the
# extension's event triggers (SECURITY DEFINER) and guards run on them, and
# must never run sec_trojan's code as anyone else.
psql -X -q -d $DB -c "CREATE SCHEMA trojan_app AUTHORIZATION sec_trojan" >/dev/null
out=$(psql -X -q -v ON_ERROR_STOP=1 -d $DB 2>&1 <<'SQL'
SET ROLE sec_trojan;
SET search_path = trojan_app, public, pg_catalog;
-- Generation and index expressions must be immutable: this one says it is.
CREATE FUNCTION trojan_app.imm(what pg_catalog.text) RETURNS pg_catalog.bool IMMUTABLE
    LANGUAGE plpgsql AS $$ BEGIN RETURN public.trojan_fire(what); END $$;
CREATE TABLE t_row (id pg_catalog.int8 PRIMARY KEY,
                    d public.text DEFAULT 'd',
                    c pg_catalog.int4 CHECK (public.trojan_fire('check constraint')),
                    g pg_catalog.bool GENERATED ALWAYS AS (trojan_app.imm('generated column')) STORED,
                    fence fencing_token);
CREATE INDEX ON t_row ((trojan_app.imm('index expression ' OPERATOR(pg_catalog.||) id::pg_catalog.text)));
CREATE FUNCTION trojan_app.trig() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('user trigger'); RETURN NEW; END $$;
CREATE TRIGGER a_trig BEFORE INSERT OR UPDATE ON t_row FOR EACH ROW EXECUTE FUNCTION trojan_app.trig();
ALTER TABLE t_row ENABLE ROW LEVEL SECURITY;
ALTER TABLE t_row FORCE ROW LEVEL SECURITY;
CREATE POLICY p ON t_row USING (public.trojan_fire('rls policy')) WITH CHECK (public.trojan_fire('rls check'));
INSERT INTO t_row (id, c, fence) VALUES (1, 1, 10), (2, 1, 10);
BEGIN; SET LOCAL fencing.token = 11; DELETE FROM t_row WHERE id = 2; COMMIT;
SELECT fenced_update('t_row', 12, '{"id": 1}', '{"c": 2}');
SELECT fencing_high_water('t_row', '{"id": 2}');
SELECT fencing_advance('t_row', 13, '{"id": 1}');
SELECT fencing_reset('t_row', '{"id": 2}');
TRUNCATE t_row;
ALTER TABLE t_row ADD COLUMN more public.int8 DEFAULT 1;
CREATE TYPE trojan_app.shard AS ENUM ('s1', 's2');
CREATE DOMAIN trojan_app.dshard AS pg_catalog.text CHECK (public.trojan_fire('resource domain'));
CREATE TABLE t_res (id pg_catalog.int8 PRIMARY KEY, res trojan_app.dshard, fence fencing_token);
SELECT fencing_protect('t_res', scope => 'resource', resource_column => 'res', resource_namespace => 'trojan');
INSERT INTO t_res VALUES (1, 'x', 5);
SELECT fencing_advance('t_res', 6, '{"res": "x"}'), fencing_reset('t_res', '{"res": "x"}');
SELECT fencing_acquire('x', 'me', '1 min', NULL, 'trojan');
CREATE TABLE t_part (id pg_catalog.int8, k pg_catalog.text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE t_part_a PARTITION OF t_part FOR VALUES IN ('a');
INSERT INTO t_part VALUES (1, 'a', 1);
SELECT count(*) FROM fencing_verify_guards(true);
DROP TABLE t_part, t_res;
RESET ROLE;
SQL
)
echo "exit $?" | grep -q "exit 0" || echo "$out" | grep -E "ERROR" | head -5
check "A: sec_trojan uses the extension on tables full of trojans" "0" "$(echo "$out" | grep -c ERROR)"
check "A: sec_trojan's tables are fenced (its trojans ran, as sec_trojan)" "yes" \
    "$(q $DB "SELECT CASE WHEN count(*) > 0 AND bool_and(run_as = 'sec_trojan') THEN 'yes' ELSE 'no' END
              FROM public.trojan_log")"
check "A: no trojan ran as another role (event triggers, guards, internal sessions)" "0 |0" \
    "$(traces $DB "WHERE run_as <> 'sec_trojan'")|$(echo "$out" | grep -c 'TROJAN RAN')"
check "A: sec_trojan still gained nothing" "$none" "$(privileges_of_trojan $DB)"

# ---------------------------------------------------------------- B: UPDATE
DB=fencing_sec_update
psql -X -q -v ON_ERROR_STOP=1 -d $DB >/dev/null <<'SQL'
CREATE EXTENSION fencing VERSION '1.0';
CREATE TABLE codes (code char(5) PRIMARY KEY, fence fencing_token);
INSERT INTO codes VALUES ('ab', 40), ('cd', 40);
BEGIN; SET LOCAL fencing.token = 45; DELETE FROM codes WHERE code = 'ab'; COMMIT;
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard', resource_namespace => 'sec');
INSERT INTO orders VALUES (1, 's', 50);
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
INSERT INTO ledger VALUES (1, 60);
SQL
psql -X -q -v ON_ERROR_STOP=1 -d $DB -f "$HERE/trojans.sql" >/dev/null
out=$(hostile_session $DB "ALTER EXTENSION fencing UPDATE;")
check "B: ALTER EXTENSION UPDATE from 1.0 succeeds next to the trojans" "exit 0|$current" \
    "$(echo "$out" | tail -1)|$(q $DB "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")"
check "B: no trojan ran during the update (log, warnings)" "0 |0" \
    "$(traces $DB)|$(echo "$out" | grep -c 'TROJAN RAN')"
check "B: the state came through (tombstone, resource, table HWMs)" "45|50|60" \
    "$(q $DB "SELECT public.fencing_high_water('public.codes', '{\"code\": \"ab\"}') || '|' ||
                     public.fencing_resource_high_water('s', 'sec') || '|' ||
                     public.fencing_high_water('public.ledger')")"
check "B: sec_trojan gained nothing" "$none" "$(privileges_of_trojan $DB)"

# ------------------------------------------- C: names the scripts create
DB=fencing_sec_squat
psql -X -q -v ON_ERROR_STOP=1 -d $DB -f "$HERE/trojans.sql" >/dev/null
psql -X -q -d postgres -c "GRANT CREATE ON DATABASE $DB TO sec_trojan" >/dev/null
psql -X -q -d $DB -c "SET ROLE sec_trojan" -c "CREATE SCHEMA fencing" \
    -c "CREATE FUNCTION fencing.guard() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN RETURN NEW; END \$\$" >/dev/null
out=$(hostile_session $DB "CREATE EXTENSION fencing;")
check "C: a squatted schema fencing makes CREATE EXTENSION fail, not adopt it" "exit 3|0" \
    "$(echo "$out" | tail -1)|$(q $DB "SELECT count(*) FROM pg_extension WHERE extname = 'fencing'")"
psql -X -q -d $DB -c "DROP SCHEMA fencing CASCADE" >/dev/null 2>&1
psql -X -q -d $DB -c "REVOKE CREATE ON DATABASE $DB FROM sec_trojan" -c "CREATE EXTENSION fencing VERSION '1.0'" >/dev/null
psql -X -q -d $DB -c "SET ROLE sec_trojan" \
    -c "CREATE VIEW public.fencing_leases AS SELECT 1 AS resource" \
    -c "CREATE FUNCTION public.fencing_verify_guards(repair bool DEFAULT false) RETURNS TABLE (table_name regclass, problem text, repaired bool) LANGUAGE sql AS 'SELECT NULL::regclass, NULL::text, NULL::bool WHERE false'" >/dev/null
out=$(hostile_session $DB "ALTER EXTENSION fencing UPDATE;")
check "C: objects squatting the update's names make ALTER EXTENSION UPDATE fail" "exit 3|1.0" \
    "$(echo "$out" | tail -1)|$(q $DB "SELECT extversion FROM pg_extension WHERE extname = 'fencing'")"
check "C: ... and none of them became a member of the extension" "0" \
    "$(q $DB "SELECT count(*) FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'fencing'
              WHERE (d.classid = 'pg_class'::regclass AND d.objid = 'public.fencing_leases'::regclass)
                 OR (d.classid = 'pg_proc'::regclass AND d.objid IN
                     (SELECT oid FROM pg_proc WHERE proowner = 'sec_trojan'::regrole))")"
check "C: sec_trojan gained nothing" "f|0|0|f|f" "$(privileges_of_trojan $DB)"

# ------------------------------------------- SECURITY DEFINER functions
DB=fencing_sec_create
check "every SECURITY DEFINER function pins search_path ending in pg_temp" "" \
    "$(q $DB "SELECT string_agg(p.oid::regprocedure::text, ', ') FROM pg_proc p
              JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
              JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'fencing'
             WHERE p.prosecdef AND NOT coalesce(
                   (SELECT c ~ '^search_path=pg_catalog, pg_temp$' FROM unnest(p.proconfig) c
                     WHERE c LIKE 'search_path=%'), false)")"
check "no SECURITY DEFINER function is executable by PUBLIC" "" \
    "$(q $DB "SELECT string_agg(p.oid::regprocedure::text, ', ') FROM pg_proc p
              JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
              JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'fencing'
             WHERE p.prosecdef AND has_function_privilege('public', p.oid, 'EXECUTE')")"
check "the extension is not marked trusted (docs/security.md)" "trusted = false" \
    "$(grep -E '^trusted' fencing.control)"
finish
