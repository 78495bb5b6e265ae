-- Smaller defects of 1.0, one block each (IDs from the hardening review).
\set VERBOSITY terse

-- M5: on_stale => 'skip' never skips a foreign key's cascade (skipping it
-- would leave the constraint violated): the stale cascade is an error.
CREATE TABLE par_fk (id int PRIMARY KEY, tok bigint UNIQUE);
INSERT INTO par_fk VALUES (1, 100);
CREATE TABLE ch_fk (id int PRIMARY KEY, fence bigint REFERENCES par_fk(tok) ON UPDATE CASCADE);
SELECT fencing_protect('ch_fk', token_column => 'fence', on_stale => 'skip');
INSERT INTO ch_fk VALUES (1, 100);
UPDATE par_fk SET tok = 5 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT c.id, c.fence, p.id AS parent_id FROM ch_fk c LEFT JOIN par_fk p ON p.tok = c.fence;
-- A direct stale write is still skipped, as configured.
UPDATE ch_fk SET fence = 5 WHERE id = 1;
-- A cascade with a fresh token goes through.
UPDATE par_fk SET tok = 200 WHERE id = 1;
SELECT c.id, c.fence, p.id AS parent_id FROM ch_fk c LEFT JOIN par_fk p ON p.tok = c.fence;
DROP TABLE ch_fk, par_fk;

-- M18: a DEFAULT on the token column does not conflict with fencing.token.
CREATE TABLE dft (id int PRIMARY KEY, v int, fence fencing_token DEFAULT 0);
BEGIN; SET LOCAL fencing.token = 50; INSERT INTO dft (id, v) VALUES (1, 1); COMMIT;
SELECT * FROM dft;
BEGIN; SET LOCAL fencing.token = 40; UPDATE dft SET v = 2 WHERE id = 1; ROLLBACK;
BEGIN; SET LOCAL fencing.token = 40; INSERT INTO dft (id, v) VALUES (2, 1); COMMIT;
SELECT * FROM dft ORDER BY id;
DROP TABLE dft;

-- Tokens of every integer type a driver may bind: smallint, integer, bigint
-- and integral numeric, as column values and as fenced_update() arguments.
CREATE TABLE drv (id int PRIMARY KEY, v int, fence fencing_token);
INSERT INTO drv VALUES (1, 0, 34::smallint);
UPDATE drv SET fence = 35::smallint WHERE id = 1;
SELECT fenced_update('drv', 36::smallint, '{"id": 1}', '{"v": 1}');
SELECT fenced_update('drv', 37::numeric, '{"id": 1}', '{"v": 2}');
UPDATE drv SET fence = 9223372036854775807::numeric WHERE id = 1;
SELECT fence FROM drv;
SELECT 1.5::numeric::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT 'NaN'::numeric::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT 9223372036854775808::numeric::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT (-1)::smallint::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT 42.000::numeric::fencing_token AS integral_numeric;
-- No operator became ambiguous.
SELECT count(*) FROM drv WHERE fence > 35 AND fence > 35::smallint AND fence > 35.0;
DROP TABLE drv;

-- fencing_high_water() reads the latest tombstones: VOLATILE, not STABLE.
SELECT p.proname, p.provolatile FROM pg_catalog.pg_proc p
 WHERE p.proname IN ('fencing_high_water', 'fencing_resource_high_water') ORDER BY 1;

-- The HWM tables are heap tables.
SELECT c.relname, a.amname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_am a ON a.oid = c.relam
 WHERE c.relnamespace = 'fencing'::regnamespace AND c.relkind = 'r'
   AND c.relname IN ('resource_hwm', 'table_hwm', 'row_tombstone') ORDER BY 1;

-- M2, M3: strict mode admits a token equal to the HWM only to the transaction
-- that raised the HWM to it, by one rule on every path (row, tombstone,
-- resource, table).
CREATE TABLE st (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('st', strict => true, require_token => false);
INSERT INTO st VALUES (1, 1, 101), (2, 2, 100);
UPDATE st SET v = 11, fence = 101 WHERE id = 1;  -- same payload would be a replay (fencing_replay)
\echo :LAST_ERROR_SQLSTATE
-- M2: an unfenced write does not make the row "ours".
BEGIN;
UPDATE st SET v = 12 WHERE id = 1;
UPDATE st SET v = 13, fence = 101 WHERE id = 1;
ROLLBACK;
-- ... while the raising transaction may go on with its token.
BEGIN;
UPDATE st SET v = 14, fence = 102 WHERE id = 1;
UPDATE st SET v = 15, fence = 102 WHERE id = 1;
COMMIT;
-- M3: it may also delete and re-insert its own key, or move a key and back.
BEGIN; SET LOCAL fencing.token = 200; DELETE FROM st WHERE id = 2; INSERT INTO st VALUES (2, 5); COMMIT;
BEGIN; SET LOCAL fencing.token = 300; UPDATE st SET id = 3 WHERE id = 1; UPDATE st SET id = 1 WHERE id = 3; COMMIT;
SELECT * FROM st ORDER BY id;
SELECT fencing_high_water('st', '{"id": 3}') AS moved_away_tombstone;
-- Another transaction with the same tokens is refused, everywhere.
BEGIN; SET LOCAL fencing.token = 300; UPDATE st SET v = 0 WHERE id = 1; ROLLBACK;
BEGIN; SET LOCAL fencing.token = 300; INSERT INTO st VALUES (3, 0); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 200; UPDATE st SET v = 0 WHERE id = 2; ROLLBACK;
-- A raise rolled back with its savepoint is forgotten with it.
BEGIN;
SET LOCAL fencing.token = 400;
SAVEPOINT s; UPDATE st SET v = 1 WHERE id = 2; ROLLBACK TO SAVEPOINT s;
SET LOCAL fencing.token = 400;
UPDATE st SET v = 2 WHERE id = 2;
COMMIT;
SELECT * FROM st ORDER BY id;
DROP TABLE st;
-- Resource and table scope: the SPI path for a first write and the direct
-- path afterwards apply the same rule.
CREATE TABLE sr (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('sr', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'minor-strict', strict => true);
BEGIN;
INSERT INTO sr VALUES (1, 'a', 10);
INSERT INTO sr VALUES (2, 'a', 10);
UPDATE sr SET fence = 10 WHERE shard = 'a';
COMMIT;
INSERT INTO sr VALUES (3, 'a', 10);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE stt (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('stt', scope => 'table', strict => true);
BEGIN; INSERT INTO stt VALUES (1, 7), (2, 7); UPDATE stt SET fence = 7; COMMIT;
INSERT INTO stt VALUES (3, 7);
\echo :LAST_ERROR_SQLSTATE
DROP TABLE sr, stt;
DELETE FROM fencing.resource_hwm WHERE namespace = 'minor-strict';
DELETE FROM fencing.resource_namespace WHERE name = 'minor-strict';

-- fencing_high_water() on an enum primary key (polymorphic opclass): no XX000.
CREATE TYPE minor_color AS ENUM ('red', 'green');
CREATE TABLE enum_pk (c minor_color PRIMARY KEY, fence fencing_token);
INSERT INTO enum_pk VALUES ('red', 5), ('green', 6);
BEGIN; SET LOCAL fencing.token = 9; DELETE FROM enum_pk WHERE c = 'green'; COMMIT;
SELECT fencing_high_water('enum_pk', '{"c": "red"}') AS live,
       fencing_high_water('enum_pk', '{"c": "green"}') AS tombstone;
SELECT fencing_reset('enum_pk', '{"c": "green"}');
DROP TABLE enum_pk;
DROP TYPE minor_color;
DELETE FROM fencing.reset_log WHERE target = 'public.enum_pk';

-- Row scope's tombstone reads (the guard's lookup, the AFTER INSERT recheck,
-- fencing_high_water()) through row_tombstone's primary key index, and
-- through SPI when row_tombstone is not of the direct path's shape (an index
-- added): the same answers.
CREATE TABLE tomb_paths (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('tomb_paths', require_token => false);  -- token-less inserts below
INSERT INTO tomb_paths VALUES (1, 5), (2, 5);
BEGIN; SET LOCAL fencing.token = 8; DELETE FROM tomb_paths WHERE id IN (1, 2); COMMIT;
INSERT INTO tomb_paths VALUES (1, 7);
\echo :LAST_ERROR_SQLSTATE
BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL fencing.token = 7;
INSERT INTO tomb_paths VALUES (1);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- Token-less: judged by the AFTER INSERT recheck.
INSERT INTO tomb_paths (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('tomb_paths', '{"id": 1}') AS direct_hwm;
CREATE INDEX row_tombstone_hwm ON fencing.row_tombstone (hwm);
INSERT INTO tomb_paths VALUES (2, 7);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO tomb_paths (id) VALUES (2);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('tomb_paths', '{"id": 2}') AS spi_hwm;
INSERT INTO tomb_paths VALUES (2, 8);
DROP INDEX fencing.row_tombstone_hwm;
INSERT INTO tomb_paths VALUES (1, 9), (3, 1);
SELECT * FROM tomb_paths ORDER BY id;
DROP TABLE tomb_paths;

-- The HWM tables' primary keys rebuilt on their columns in another order (a
-- superuser's ALTER TABLE): the direct path's scan keys (relid then key;
-- namespace then resource) no longer fit the index, so reads and raises take
-- the SPI path, with the same answers. The tombstone probe once compared an
-- oid as a text[] and crashed the server.
CREATE TABLE tomb_order (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('tomb_order', require_token => false);  -- a token-less insert below
INSERT INTO tomb_order VALUES (1, 5);
BEGIN; SET LOCAL fencing.token = 8; DELETE FROM tomb_order; COMMIT;
CREATE TABLE res_order (id int PRIMARY KEY, r text, fence fencing_token);
SELECT fencing_protect('res_order', scope => 'resource', resource_column => 'r',
                       resource_namespace => 'minor_order');
INSERT INTO res_order VALUES (1, 'a', 8);
ALTER TABLE fencing.row_tombstone
    DROP CONSTRAINT row_tombstone_pkey, ADD PRIMARY KEY (key, relid);
ALTER TABLE fencing.resource_hwm
    DROP CONSTRAINT resource_hwm_pkey, ADD PRIMARY KEY (resource, namespace);
INSERT INTO tomb_order VALUES (1, 7);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO tomb_order (id) VALUES (1);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('tomb_order', '{"id": 1}') AS tomb_hwm;
INSERT INTO res_order VALUES (2, 'a', 7);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO res_order VALUES (2, 'a', 9), (3, 'b', 4);
SELECT fencing_high_water('res_order', '{"r": "a"}') AS res_hwm;
INSERT INTO tomb_order VALUES (1, 8);
ALTER TABLE fencing.row_tombstone
    DROP CONSTRAINT row_tombstone_pkey, ADD PRIMARY KEY (relid, key);
ALTER TABLE fencing.resource_hwm
    DROP CONSTRAINT resource_hwm_pkey, ADD PRIMARY KEY (namespace, resource);
INSERT INTO res_order VALUES (4, 'a', 8);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM tomb_order ORDER BY id;
SELECT * FROM res_order ORDER BY id;
DROP TABLE tomb_order, res_order;
DELETE FROM fencing.resource_hwm WHERE namespace = 'minor_order';
DELETE FROM fencing.resource_namespace WHERE name = 'minor_order';
