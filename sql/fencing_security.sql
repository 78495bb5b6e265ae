-- Security: ownership, privileges, RLS and search_path cannot weaken the check.
\set VERBOSITY default
CREATE ROLE regress_fencing_owner;
CREATE ROLE regress_fencing_other;
CREATE SCHEMA app AUTHORIZATION regress_fencing_owner;
GRANT USAGE ON SCHEMA app TO regress_fencing_other;

SET ROLE regress_fencing_owner;
CREATE TABLE app.accounts (id int PRIMARY KEY, balance int, fence fencing_token);
CREATE TABLE app.shards (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('app.shards', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'security-test');
INSERT INTO app.accounts VALUES (1, 100, 10), (2, 100, 10);
INSERT INTO app.shards VALUES (1, 's', 10);
GRANT SELECT, INSERT, UPDATE, DELETE ON app.accounts, app.shards TO regress_fencing_other;
RESET ROLE;

-- The extension's own state is out of reach of ordinary roles ...
SET ROLE regress_fencing_other;
SELECT * FROM fencing.resource_hwm;
\echo :LAST_ERROR_SQLSTATE
UPDATE fencing.resource_hwm SET hwm = 0;
\echo :LAST_ERROR_SQLSTATE
-- ... yet their fenced writes are checked and raise HWMs there.
UPDATE app.shards SET fence = 11 WHERE id = 1;
UPDATE app.shards SET fence = 9 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_resource_high_water('s', 'security-test');
-- Only the owner (or a superuser) may protect, unprotect or reset.
SELECT fencing_unprotect('app.accounts');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('app.accounts', strict => true);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_reset('app.shards', '{"shard": "s"}');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_resource_reset('s', 'security-test');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- A resource namespace belongs to the role that first used it: another
-- table owner cannot join it and raise the HWMs its tables are judged by.
CREATE ROLE regress_fencing_squatter;
CREATE SCHEMA squat AUTHORIZATION regress_fencing_squatter;
SET ROLE regress_fencing_squatter;
CREATE TABLE squat.mine (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('squat.mine', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'security-test');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_resource_reset('s', 'security-test');
\echo :LAST_ERROR_SQLSTATE
-- The owner's own reset is logged under the owner's name.
SELECT fencing_protect('squat.mine', scope => 'table');
INSERT INTO squat.mine VALUES (1, 'x', 3);
SELECT fencing_reset('squat.mine');
RESET ROLE;
SELECT reset_by, target, old_hwm FROM fencing.reset_log WHERE target = 'squat.mine';
SET ROLE regress_fencing_owner;
SELECT fencing_resource_reset('nothing-here', 'security-test') AS owner_may_reset;
RESET ROLE;
DROP SCHEMA squat CASCADE;
DROP ROLE regress_fencing_squatter;

-- Anyone who may read the table may read its HWM; others may not.
CREATE ROLE regress_fencing_nobody;
GRANT USAGE ON SCHEMA app TO regress_fencing_nobody;
SET ROLE regress_fencing_nobody;
SELECT fencing_high_water('app.accounts', '{"id": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM fencing_protected WHERE table_name::text LIKE 'app.%';
RESET ROLE;
SET ROLE regress_fencing_other;
SELECT fencing_high_water('app.accounts', '{"id": 1}');
SELECT count(*) FROM fencing_protected WHERE table_name::text LIKE 'app.%';
RESET ROLE;

-- RLS cannot hide an HWM from the check: a row the writer cannot see still
-- has its tombstone, and a re-INSERT with a stale token is refused.
SET ROLE regress_fencing_owner;
BEGIN;
SET LOCAL fencing.token = 20;
DELETE FROM app.accounts WHERE id = 2;
COMMIT;
ALTER TABLE app.accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE app.accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY see_nothing ON app.accounts FOR SELECT USING (false);
CREATE POLICY write_all ON app.accounts FOR INSERT WITH CHECK (true);
RESET ROLE;
SET ROLE regress_fencing_other;
INSERT INTO app.accounts VALUES (2, 999, 15);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- A hostile search_path cannot change what the check runs: an operator and
-- functions shadowing pg_catalog's are ignored.
CREATE SCHEMA evil;
CREATE FUNCTION evil.always_true(bigint, bigint) RETURNS bool LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always_true);
CREATE OPERATOR evil.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always_true);
CREATE FUNCTION evil.always_true(text, text) RETURNS bool LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.always_true);
GRANT USAGE ON SCHEMA evil TO PUBLIC;
SET ROLE regress_fencing_other;
SET search_path = evil, pg_catalog, public;
UPDATE app.shards SET fence = 10 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT public.fenced_update('app.shards', 10, '{"id": 1}', '{"shard": "s"}') AS stale_with_evil_path;
RESET search_path;
RESET ROLE;
SELECT fencing_resource_high_water('s', 'security-test');

-- Extension functions that are internal are not callable by PUBLIC.
SET ROLE regress_fencing_other;
SELECT fencing.on_table_ddl('app.accounts'::regclass);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

DROP SCHEMA evil CASCADE;
DROP SCHEMA app CASCADE;
DROP ROLE regress_fencing_owner, regress_fencing_other, regress_fencing_nobody;
