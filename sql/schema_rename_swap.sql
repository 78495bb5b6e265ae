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
DROP SCHEMA IF EXISTS app_new CASCADE;
