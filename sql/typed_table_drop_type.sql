-- A typed fenced table (CREATE TABLE t OF type) dropped by DROP TYPE ...
-- CASCADE, then replaced in the same transaction by a copy renamed to t: a
-- DROP TABLE there keeps the state for the copy, and so does DROP TYPE
-- CASCADE (it dropped the table without keeping it: the tombstone gone, a
-- stale write accepted). fence_held is true when the state was kept or the
-- step refused.
\set VERBOSITY terse
SET client_min_messages = error;
\ir test/lib/sql_try.sql
\ir test/lib/carry_helpers.sql

CREATE TYPE tt_row AS (id int, v text, tok fencing_token);
CREATE TABLE tt OF tt_row (PRIMARY KEY (id));
INSERT INTO tt VALUES (1, 'one', 10), (2, 'two', 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM tt WHERE id = 1; COMMIT;
SELECT fencing_high_water('tt', '{"id": 1}') AS tombstone_before;

BEGIN;
SELECT pg_temp.copy_then('tt', 'tt_new', 'DROP TYPE tt_row CASCADE; ALTER TABLE tt_new RENAME TO tt') AS swap;
COMMIT;
SELECT fencing_high_water('tt', '{"id": 1}') AS tombstone_after, pg_temp.fence_held('tt');
DROP TABLE IF EXISTS tt, tt_new;
DROP TYPE IF EXISTS tt_row;
