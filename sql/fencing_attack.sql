-- Regressions from the attack pass on the hardened code (attack2/ IDs).
\set VERBOSITY terse
SET client_min_messages = warning;

-- A3: a resource column under a nondeterministic collation is refused: equal
-- values ('ACCT-1', 'acct-1') would get separate HWMs.
CREATE COLLATION att_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE att_a3 (id int PRIMARY KEY, res text COLLATE att_ci, fence fencing_token);
SELECT fencing_protect('att_a3', scope => 'resource', resource_column => 'res',
                       resource_namespace => 'att-a3');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE att_a3;
DROP COLLATION att_ci;

-- A5: fencing.protected_sync() attached anywhere else, or FOR EACH STATEMENT,
-- is a protocol error, not a crash (superuser only).
CREATE TABLE att_a5 (a int);
CREATE TRIGGER a5s AFTER INSERT ON att_a5 FOR EACH STATEMENT
    EXECUTE FUNCTION fencing.protected_sync();
INSERT INTO att_a5 VALUES (1);
\echo :LAST_ERROR_SQLSTATE
DROP TABLE att_a5;

-- A6: a hand-attached guard whose policy names a resource column past the
-- table's columns is refused, not read out of bounds (superuser only; the
-- guard-integrity event trigger, which would drop it, is off here).
ALTER EVENT TRIGGER fencing_guard_ddl_end DISABLE;
SET fencing.auto_protect = off;
CREATE TABLE att_a6 (id int, r text, fence fencing_token);
CREATE TRIGGER a6g BEFORE INSERT ON att_a6 FOR EACH ROW
    EXECUTE FUNCTION fencing.guard('v1 1259 3 resource error 0 0 1500', 'ns');
INSERT INTO att_a6 VALUES (1, 'a', 5);
\echo :LAST_ERROR_SQLSTATE
DROP TABLE att_a6;
RESET fencing.auto_protect;
ALTER EVENT TRIGGER fencing_guard_ddl_end ENABLE ALWAYS;

-- A8: strict mode, row scope: an INSERT that ends in ON CONFLICT's UPDATE (or
-- in nothing) is not a raise; another transaction's HWM token stays refused.
CREATE TABLE att_a8 (id int PRIMARY KEY, v text, fence fencing_token);
SELECT fencing_protect('att_a8', strict => true);
INSERT INTO att_a8 VALUES (1, 'holder', 10), (2, 'holder', 20);
INSERT INTO att_a8 VALUES (1, 'upsert, token 10', 10)
    ON CONFLICT (id) DO UPDATE SET v = excluded.v, fence = excluded.fence;
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_upsert('att_a8', 10, '{"id": 1, "v": "fenced_upsert, token 10"}') AS upsert_rows;
BEGIN; SET LOCAL fencing.token = 10;
INSERT INTO att_a8 (id, v) VALUES (1, 'upsert via fencing.token') ON CONFLICT (id) DO UPDATE SET v = excluded.v;
ROLLBACK;
BEGIN;
INSERT INTO att_a8 VALUES (2, 'nothing', 20) ON CONFLICT DO NOTHING;
UPDATE att_a8 SET v = 'second transaction, token 20', fence = 20 WHERE id = 2;
ROLLBACK;
-- ... while a transaction that really inserted a key may go on with its token.
BEGIN;
INSERT INTO att_a8 VALUES (3, 'new', 30);
UPDATE att_a8 SET v = 'same transaction', fence = 30 WHERE id = 3;
COMMIT;
SELECT * FROM att_a8 ORDER BY id;
DROP TABLE att_a8;

-- A10: a foreign table cannot become a partition of a fenced table (writes
-- routed to it would fire no trigger here).
CREATE EXTENSION postgres_fdw;
CREATE SERVER att_loop FOREIGN DATA WRAPPER postgres_fdw;
CREATE TABLE att_a10 (id int, g int, fence fencing_token) PARTITION BY LIST (g);
SELECT fencing_protect('att_a10', scope => 'table');
CREATE TABLE att_a10_1 PARTITION OF att_a10 FOR VALUES IN (1);
CREATE FOREIGN TABLE att_a10_2 PARTITION OF att_a10 FOR VALUES IN (2) SERVER att_loop;
\echo :LAST_ERROR_SQLSTATE
CREATE FOREIGN TABLE att_a10_3 (id int, g int, fence fencing_token) SERVER att_loop;
ALTER TABLE att_a10 ATTACH PARTITION att_a10_3 FOR VALUES IN (3);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS partitions FROM pg_catalog.pg_inherits WHERE inhparent = 'att_a10'::regclass;
DROP FOREIGN TABLE att_a10_3;
DROP TABLE att_a10;
DROP SERVER att_loop;
DROP EXTENSION postgres_fdw;

-- A11: a BEFORE ROW trigger that sorts after the guard, planted before the
-- table is fenced, makes fencing it fail (it would run after the check).
CREATE TABLE att_a11 (id int PRIMARY KEY, v text);
CREATE FUNCTION att_lower_token() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RETURN NEW; END $$;
CREATE TRIGGER zzz_audit BEFORE UPDATE ON att_a11 FOR EACH ROW EXECUTE FUNCTION att_lower_token();
ALTER TABLE att_a11 ADD COLUMN fence fencing_token;
\echo :LAST_ERROR_SQLSTATE
SET fencing.auto_protect = off;
ALTER TABLE att_a11 ADD COLUMN fence fencing_token;
RESET fencing.auto_protect;
SELECT fencing_protect('att_a11');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS listed FROM fencing_protected WHERE table_name = 'att_a11'::regclass;
DROP TABLE att_a11;
DROP FUNCTION att_lower_token();

-- A12, A13: no extension may own a fencing trigger or an index of a fenced
-- table (DROP EXTENSION would drop them past every other check), and a
-- row-scope primary key dropped by cascade while tombstones exist is refused.
CREATE EXTENSION citext;
CREATE TABLE att_a12 (id int PRIMARY KEY, v text, fence fencing_token);
INSERT INTO att_a12 VALUES (1, 'a', 10), (2, 'b', 10);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM att_a12 WHERE id = 2; COMMIT;
DO $$ BEGIN
    EXECUTE (SELECT pg_catalog.format('ALTER TRIGGER %I ON att_a12 DEPENDS ON EXTENSION citext', tgname)
               FROM pg_catalog.pg_trigger
              WHERE tgrelid = 'att_a12'::regclass AND tgname LIKE 'zz\_fencing\_guard\_%');
END $$;
\echo :LAST_ERROR_SQLSTATE
ALTER INDEX att_a12_pkey DEPENDS ON EXTENSION citext;
\echo :LAST_ERROR_SQLSTATE
CREATE DOMAIN att_id AS int;
CREATE TABLE att_a13 (id att_id PRIMARY KEY, fence fencing_token);
INSERT INTO att_a13 VALUES (1, 10), (2, 10);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM att_a13 WHERE id = 2; COMMIT;
DROP DOMAIN att_id CASCADE;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO att_a13 VALUES (2, 5);
\echo :LAST_ERROR_SQLSTATE
DROP EXTENSION citext;
SELECT count(*) AS fencing_triggers FROM pg_catalog.pg_trigger
 WHERE tgrelid = 'att_a12'::regclass AND tgname LIKE 'zz\_fencing\_%';
UPDATE att_a12 SET fence = 3 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
DROP TABLE att_a12, att_a13;
DROP DOMAIN IF EXISTS att_id;
DELETE FROM fencing.resource_namespace WHERE name LIKE 'att-%';

-- The extension's own tables cannot be fenced (superuser only; a write into
-- them would recurse).
SELECT fencing_protect('fencing.table_hwm', token_column => 'hwm', scope => 'table');
\echo :LAST_ERROR_SQLSTATE
