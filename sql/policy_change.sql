-- A policy change (fencing_protect() on a fenced table) never lowers what a
-- write is judged by: each transition carries every HWM across or is refused
-- with 55000 naming the safe path. Nothing here may be accepted below the HWM
-- the table had before the change.
\set VERBOSITY default
SET client_min_messages = notice;

-- (1) row scope, token column switch (expand/contract of a bigint column).
CREATE TABLE pc_col (id int PRIMARY KEY, v int, tok bigint);
SELECT fencing_protect('pc_col', token_column => 'tok', require_token => false);
INSERT INTO pc_col VALUES (1, 0, 100), (2, 0, 40);
BEGIN; SET LOCAL fencing.token = 90; DELETE FROM pc_col WHERE id = 2; COMMIT;
ALTER TABLE pc_col ADD COLUMN tok2 fencing_token;
-- Switching before the backfill: refused, the HWM stays 100.
SELECT fencing_protect('pc_col', token_column => 'tok2', require_token => false);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('pc_col', '{"id": 1}') AS hwm1;
-- A backfill that leaves a row below: still refused.
BEGIN;
UPDATE pc_col SET tok2 = 99;
SELECT fencing_protect('pc_col', token_column => 'tok2', require_token => false);
ROLLBACK;
-- The backfill as the hint says, in the same transaction: carried.
BEGIN;
UPDATE pc_col SET tok2 = tok WHERE tok2 IS NULL OR tok2 < tok;
SELECT fencing_protect('pc_col', token_column => 'tok2', require_token => false);
COMMIT;
SELECT token_column FROM fencing_protected WHERE table_name = 'pc_col'::regclass;
BEGIN; SET LOCAL fencing.token = 1; UPDATE pc_col SET v = 666 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- The tombstone (keyed by the primary key) judges the deleted key as before.
BEGIN; SET LOCAL fencing.token = 89; INSERT INTO pc_col VALUES (2, 666, NULL, 89); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- (2) row -> table: the table HWM is the highest row token, tombstone or floor.
CREATE TABLE pc_rt (id int PRIMARY KEY, v int, tok fencing_token);
SELECT fencing_protect('pc_rt', require_token => false);
INSERT INTO pc_rt VALUES (1, 0, 30), (2, 0, 70);
BEGIN; SET LOCAL fencing.token = 80; DELETE FROM pc_rt WHERE id = 2; COMMIT;
SELECT fencing_protect('pc_rt', scope => 'table');
SELECT fencing_high_water('pc_rt') AS table_hwm;
BEGIN; SET LOCAL fencing.token = 79; UPDATE pc_rt SET v = 666 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_advance('pc_rt', 90);

-- (3) table -> row: refused while a row (id 1, token 30) is below the table
-- HWM (90) ...
SELECT fencing_protect('pc_rt');
\echo :LAST_ERROR_SQLSTATE
-- ... carried once every row carries it: the tombstone and the floor rise to 90.
BEGIN;
SELECT fencing_allow_unfenced('pc_rt', 'raise the rows before row scope');
UPDATE pc_rt SET tok = 90 WHERE tok IS NULL OR tok < 90;
SELECT fencing_protect('pc_rt');
COMMIT;
SELECT scope FROM fencing_protected WHERE table_name = 'pc_rt'::regclass;
SELECT fencing_high_water('pc_rt', '{"id": 2}') AS deleted_key,
       fencing_high_water('pc_rt', '{"id": 42}') AS never_seen_key;
BEGIN; SET LOCAL fencing.token = 89; INSERT INTO pc_rt VALUES (2, 666); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 89; INSERT INTO pc_rt VALUES (42, 666); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 89; UPDATE pc_rt SET v = 666 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 90; INSERT INTO pc_rt VALUES (42, 1); COMMIT;

-- (4) resource scope: a namespace switch carries the old namespace's HWMs.
CREATE TABLE pc_res (id int PRIMARY KEY, shard text NOT NULL, v int, tok fencing_token);
SELECT fencing_protect('pc_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'pc_ns1');
BEGIN; SET LOCAL fencing.token = 5; INSERT INTO pc_res VALUES (1, 's1', 0); COMMIT;
SELECT fencing_resource_advance('s1', 50, 'pc_ns1');
SELECT fencing_resource_advance('s9', 60, 'pc_ns1');  -- no row names s9 yet
SELECT fencing_protect('pc_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'pc_ns2');
SELECT fencing_resource_high_water('s1', 'pc_ns2') AS s1, fencing_resource_high_water('s9', 'pc_ns2') AS s9;
BEGIN; SET LOCAL fencing.token = 6; UPDATE pc_res SET v = 2 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 59; INSERT INTO pc_res VALUES (9, 's9', 0); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- Another resource column: refused while the namespace holds HWMs.
ALTER TABLE pc_res ADD COLUMN shard2 text;
SELECT fencing_protect('pc_res', scope => 'resource', resource_column => 'shard2',
                       resource_namespace => 'pc_ns2');
\echo :LAST_ERROR_SQLSTATE

-- (5) resource -> row: refused while a row is below its resource's HWM.
SELECT fencing_protect('pc_res');
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 7; UPDATE pc_res SET v = 3 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- (6) resource -> table: the table HWM is the namespace's highest.
SELECT fencing_protect('pc_res', scope => 'table');
SELECT fencing_high_water('pc_res') AS table_hwm;
BEGIN; SET LOCAL fencing.token = 55; UPDATE pc_res SET v = 4 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- (7) table -> resource: refused (a resource's HWM may be below the table's).
SELECT fencing_protect('pc_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'pc_ns3');
\echo :LAST_ERROR_SQLSTATE

-- (8) row -> resource: the rows' tokens rise into their resources' HWMs;
-- refused while there are tombstones (their resources are not kept).
CREATE TABLE pc_rr (id int PRIMARY KEY, shard text NOT NULL, v int, tok fencing_token);
SELECT fencing_protect('pc_rr', require_token => false);
INSERT INTO pc_rr VALUES (1, 'a', 0, 40), (2, 'a', 0, 45), (3, 'b', 0, 20);
SELECT fencing_protect('pc_rr', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'pc_ns4');
SELECT fencing_resource_high_water('a', 'pc_ns4') AS a, fencing_resource_high_water('b', 'pc_ns4') AS b;
BEGIN; SET LOCAL fencing.token = 44; UPDATE pc_rr SET v = 666 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE pc_rr2 (id int PRIMARY KEY, shard text NOT NULL, v int, tok fencing_token);
INSERT INTO pc_rr2 VALUES (1, 'a', 0, 40);
BEGIN; SET LOCAL fencing.token = 41; DELETE FROM pc_rr2; COMMIT;
SELECT fencing_protect('pc_rr2', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'pc_ns4');
\echo :LAST_ERROR_SQLSTATE

-- (9) A partitioned table: the carry reads every partition, the change
-- locks each (a write to a partition locks only the partition).
CREATE TABLE pc_pp (id int PRIMARY KEY, v int, tok bigint) PARTITION BY RANGE (id);
CREATE TABLE pc_pp1 PARTITION OF pc_pp FOR VALUES FROM (0) TO (10);
CREATE TABLE pc_pp2 PARTITION OF pc_pp FOR VALUES FROM (10) TO (20);
SELECT fencing_protect('pc_pp', token_column => 'tok', require_token => false);
INSERT INTO pc_pp VALUES (1, 0, 30), (11, 0, 70), (12, 0, 5);
BEGIN; SET LOCAL fencing.token = 80; DELETE FROM pc_pp WHERE id = 12; COMMIT;
ALTER TABLE pc_pp ALTER COLUMN tok TYPE fencing_token;
SELECT fencing_protect('pc_pp', scope => 'table');
SELECT fencing_high_water('pc_pp') AS table_hwm;
BEGIN; SET LOCAL fencing.token = 79; UPDATE pc_pp1 SET v = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('pc_pp');
\echo :LAST_ERROR_SQLSTATE

-- Options that judge nothing by another HWM change freely.
SELECT fencing_protect('pc_rr2', strict => true, on_stale => 'skip');
SELECT table_name, scope, strict, on_stale FROM fencing_protected
 WHERE table_name::text LIKE 'pc\_%' ORDER BY 1;
-- Nothing above lowered an HWM: nothing was reset.
SELECT count(*) AS reset_log_rows FROM fencing.reset_log WHERE target LIKE '%pc\_%';

DROP TABLE pc_col, pc_rt, pc_res, pc_rr, pc_rr2, pc_pp;
DELETE FROM fencing.resource_hwm WHERE namespace LIKE 'pc\_ns%';
DELETE FROM fencing.resource_namespace WHERE name LIKE 'pc\_ns%';
