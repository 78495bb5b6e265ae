-- Guard integrity: a table listed in fencing_protected is fenced. DDL on the
-- guard, a trigger sorting after it, TRUNCATE, guard_ok, fencing_verify_guards.
\set VERBOSITY terse
SET client_min_messages = notice;
CREATE SCHEMA g;
SET search_path = g, public;
CREATE ROLE g_owner;
CREATE ROLE g_trig;
CREATE ROLE g_trunc;
GRANT USAGE, CREATE ON SCHEMA g TO g_owner, g_trig;
GRANT USAGE ON SCHEMA g TO g_trunc;

-- The guards are ordinary triggers named after the table's OID.
SET ROLE g_owner;
CREATE TABLE acct (id int PRIMARY KEY, v int, fence fencing_token);
INSERT INTO acct VALUES (1, 0, 100);
SELECT pg_catalog.replace(t.tgname, c.oid::text, '<oid>') AS tgname, t.tgenabled, t.tgisinternal
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relname = 'acct' ORDER BY 1;
SELECT tgname AS guard FROM pg_trigger
 WHERE tgrelid = 'acct'::regclass AND tgname LIKE 'zz_fencing_guard%' \gset
SELECT tgname AS recheck FROM pg_trigger
 WHERE tgrelid = 'acct'::regclass AND tgname LIKE 'zz_fencing\_recheck\_%' \gset

-- DROP TRIGGER of the guard (by the owner) is undone.
DROP TRIGGER :"guard" ON acct;
DROP TRIGGER :"recheck" ON acct;
UPDATE acct SET fence = 1;
\echo :LAST_ERROR_SQLSTATE
-- RENAME, DISABLE (by name, USER), ENABLE REPLICA, CREATE OR REPLACE: refused.
ALTER TRIGGER :"guard" ON acct RENAME TO aaa_guard;
ALTER TRIGGER :"recheck" ON acct RENAME TO aaa_recheck;
ALTER TABLE acct DISABLE TRIGGER :"guard";
ALTER TABLE acct DISABLE TRIGGER USER;
ALTER TABLE acct ENABLE REPLICA TRIGGER :"guard";
-- ENABLE ALWAYS: refused, and the message says what is true of apply.
\set VERBOSITY default
ALTER TABLE acct ENABLE ALWAYS TRIGGER :"guard";
\set VERBOSITY terse
CREATE FUNCTION g.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE OR REPLACE TRIGGER :"guard" BEFORE UPDATE ON acct
    FOR EACH ROW EXECUTE FUNCTION g.noop();
UPDATE acct SET fence = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name = 'acct'::regclass;
RESET ROLE;
-- DISABLE TRIGGER ALL, even by a superuser, is refused.
ALTER TABLE acct DISABLE TRIGGER ALL;
-- Other triggers can still be disabled by name.
CREATE TRIGGER a_noop BEFORE UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION g.noop();
ALTER TABLE acct DISABLE TRIGGER a_noop;
ALTER TABLE acct ENABLE TRIGGER ALL;

-- A role holding only TRIGGER may not add a BEFORE ROW trigger that runs after
-- the guard (names sort bytewise: non-ASCII sorts after "zz_fencing_guard").
GRANT SELECT, UPDATE, TRIGGER ON acct TO g_trig;
SET ROLE g_trig;
CREATE FUNCTION g.lower_tok() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.fence := 1; RETURN NEW; END $$;
CREATE TRIGGER "étape" BEFORE UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION g.lower_tok();
CREATE TRIGGER zzz BEFORE INSERT OR UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION g.lower_tok();
UPDATE acct SET v = 2, fence = 100 WHERE id = 1;
-- One that runs before the guard is judged by it; AFTER triggers cannot change NEW.
CREATE TRIGGER a_lower BEFORE UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION g.lower_tok();
CREATE TRIGGER zzz_after AFTER UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION g.lower_tok();
UPDATE acct SET v = 2, fence = 100 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- The owner cannot rename a trigger to sort after the guard either.
ALTER TRIGGER a_lower ON acct RENAME TO "zz_late";
DROP TRIGGER a_lower ON acct;
DROP TRIGGER zzz_after ON acct;
SELECT * FROM acct;

-- TRUNCATE by a non-owner holding TRUNCATE and INSERT, then a stale re-INSERT.
-- Row scope: TRUNCATE leaves a tombstone for every row.
SET ROLE g_owner;
CREATE TABLE tr_row (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('tr_row', require_token => false);  -- row 3 has no token
INSERT INTO tr_row VALUES (1, 100), (2, 200), (3, NULL);
CREATE TABLE tr_res (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('tr_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'g_trunc_ns');
INSERT INTO tr_res VALUES (1, 's', 100);
CREATE TABLE tr_tab (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('tr_tab', scope => 'table');
INSERT INTO tr_tab VALUES (1, 100);
CREATE TABLE tr_part (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE tr_part_a PARTITION OF tr_part FOR VALUES IN ('a');
INSERT INTO tr_part VALUES (1, 'a', 100);
GRANT INSERT, TRUNCATE ON tr_row, tr_res, tr_tab, tr_part TO g_trunc;
RESET ROLE;
SET ROLE g_trunc;
TRUNCATE tr_row, tr_res, tr_tab;
TRUNCATE tr_part;
INSERT INTO tr_row VALUES (1, 5);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO tr_row VALUES (2, 199);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO tr_res VALUES (1, 's', 5);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO tr_tab VALUES (1, 5);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO tr_part VALUES (1, 'a', 5);
\echo :LAST_ERROR_SQLSTATE
-- A fresh token is admitted; a row that had no token left no tombstone.
INSERT INTO tr_row VALUES (1, 100), (2, 200), (3, NULL);
RESET ROLE;
SELECT fencing_high_water('tr_row', '{"id": 2}'), fencing_high_water('tr_part', '{"id": 1, "k": "a"}');

-- guard_ok and fencing_verify_guards(): a superuser can still break a guard
-- (catalog updates, disabling fencing's event triggers, or pg_upgrade from 1.0,
-- whose guards were internal triggers); each is reported and repaired.
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name::text LIKE 'g.%' OR table_name::text IN ('acct', 'tr_row', 'tr_res', 'tr_tab', 'tr_part') ORDER BY table_name::text;
SELECT * FROM fencing_verify_guards();
UPDATE pg_trigger SET tgenabled = 'D' WHERE tgname = 'zz_fencing_guard_' || 'tr_row'::regclass::oid;
UPDATE pg_trigger SET tgisinternal = true WHERE tgname = 'zz_fencing_guard_' || 'tr_tab'::regclass::oid;
SELECT tgname AS part_guard FROM pg_trigger
 WHERE tgname = 'zz_fencing_guard_' || 'tr_part_a'::regclass::oid \gset
ALTER EVENT TRIGGER fencing_guard_ddl_end DISABLE;
DROP TRIGGER :"part_guard" ON tr_part_a;
ALTER EVENT TRIGGER fencing_guard_ddl_end ENABLE ALWAYS;
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name::text IN ('tr_row', 'tr_part', 'tr_tab') ORDER BY table_name::text;
SELECT table_name, pg_catalog.regexp_replace(problem, '_[0-9]+', '_<oid>', 'g') AS problem, repaired
  FROM fencing_verify_guards() ORDER BY table_name::text;
-- A non-owner sees the problem but cannot repair.
GRANT SELECT ON tr_row TO g_trig;
SET ROLE g_trig;
SELECT table_name, repaired FROM fencing_verify_guards(true);
RESET ROLE;
SELECT table_name, repaired FROM fencing_verify_guards(true) ORDER BY table_name::text;
SELECT * FROM fencing_verify_guards();
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name::text IN ('tr_row', 'tr_part') ORDER BY table_name::text;
INSERT INTO tr_part VALUES (2, 'a', 5);
INSERT INTO tr_part VALUES (1, 'a', 5);
\echo :LAST_ERROR_SQLSTATE

-- A guard created by a statement (as a restored dump does) is replaced by the
-- policy's own guards; one for a table without a policy fences it under the
-- guard's policy, refusing writes until its state is restored (WARNING;
-- sql/restore_without_state.sql). Here: the same name, a home relid from
-- another database.
SELECT pg_catalog.regexp_replace(pg_get_triggerdef(oid), '''v1 [0-9]+', '''v1 1') AS def
  FROM pg_trigger WHERE tgname = 'zz_fencing_guard_' || 'tr_tab'::regclass::oid \gset
:def;
SELECT count(*) AS guards FROM pg_trigger WHERE tgrelid = 'tr_tab'::regclass AND tgname LIKE 'zz_fencing_guard_%';
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name = 'tr_tab'::regclass;
INSERT INTO tr_tab VALUES (2, 99);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE plain (id int PRIMARY KEY, fence bigint);
CREATE TRIGGER zz_fencing_guard_1 BEFORE INSERT OR UPDATE OR DELETE ON plain
    FOR EACH ROW EXECUTE FUNCTION fencing.guard('v1 1 2 row error 0 0 0', '');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'plain'::regclass;

-- fencing_unprotect removes every fencing trigger.
SELECT fencing_unprotect('tr_row');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'tr_row'::regclass;

DROP SCHEMA g CASCADE;
SET search_path = public;
DROP OWNED BY g_owner, g_trig, g_trunc;
DROP ROLE g_owner, g_trig, g_trunc;
