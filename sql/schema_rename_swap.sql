-- A schema swap (build the new table in a staging schema, DROP SCHEMA old
-- CASCADE, ALTER SCHEMA staging RENAME TO old) moves a table into the dropped
-- fenced table's name without CREATE TABLE, ALTER TABLE RENAME or SET SCHEMA:
-- each table of the renamed schema adopts the kept state of its name (it
-- vanished at COMMIT before: a stale INSERT at 12 below the tombstone at 30
-- was accepted). fence_held is true when the state followed.
\set VERBOSITY terse
SET client_min_messages = error;
\ir test/lib/sql_try.sql
\ir test/lib/carry_helpers.sql

CREATE SCHEMA app;
CREATE TABLE app.t (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO app.t VALUES (1, 'one', 10), (2, 'two', 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM app.t WHERE id = 1; COMMIT;
SELECT fencing_high_water('app.t', '{"id": 1}') AS tombstone_before;

BEGIN;
CREATE SCHEMA app_new;
SELECT pg_temp.copy_then('app.t', 'app_new.t', 'DROP SCHEMA app CASCADE; ALTER SCHEMA app_new RENAME TO app') AS swap;
COMMIT;
SELECT fencing_high_water('app.t', '{"id": 1}') AS tombstone_after, pg_temp.fence_held('app.t');
DROP SCHEMA app CASCADE;

-- A partitioned row-scope table and a table-scope table swapped together;
-- a later plain rename of the schema carries nothing and changes nothing.
CREATE SCHEMA app;
CREATE TABLE app.p (id int PRIMARY KEY, v text, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE app.p_1 PARTITION OF app.p FOR VALUES FROM (0) TO (100);
INSERT INTO app.p VALUES (1, 'one', 10), (2, 'two', 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM app.p WHERE id = 1; COMMIT;
CREATE TABLE app.t (id int PRIMARY KEY, v text, tok fencing_token);
SELECT fencing_protect('app.t', 'tok', scope => 'table') IS NOT NULL AS protected;
INSERT INTO app.t VALUES (1, 'one', 50);
BEGIN;
CREATE SCHEMA app_new;
CREATE TABLE app_new.p (LIKE app.p) PARTITION BY RANGE (id);
ALTER TABLE app_new.p ADD PRIMARY KEY (id);
CREATE TABLE app_new.p_1 PARTITION OF app_new.p FOR VALUES FROM (0) TO (100);
INSERT INTO app_new.p SELECT * FROM app.p;
CREATE TABLE app_new.t (LIKE app.t INCLUDING ALL);
INSERT INTO app_new.t SELECT * FROM app.t;
DROP SCHEMA app CASCADE;
ALTER SCHEMA app_new RENAME TO app;
COMMIT;
SELECT table_name, scope FROM fencing_protected ORDER BY table_name::text;
SELECT fencing_high_water('app.p', '{"id": 1}') AS p_key1, fencing_high_water('app.t') AS t_hwm,
       pg_temp.fence_held('app.p') AS p_fence_held,
       pg_temp.try($$SET LOCAL fencing.token = 49; UPDATE app.t SET v = 'stale' WHERE id = 1$$) AS t_stale;
ALTER SCHEMA app RENAME TO app2;
SELECT fencing_high_water('app2.p', '{"id": 1}') AS p_key1_renamed;
DROP SCHEMA app2 CASCADE;
