-- A fenced table of a table access method dropped by DROP ACCESS METHOD ...
-- CASCADE, then replaced in the same transaction by a copy renamed to its
-- name: the state is kept for the copy, as DROP TABLE keeps it (it was
-- dropped without keeping: the tombstone gone, a stale write accepted).
-- fence_held is true when the state was kept or the step refused.
\set VERBOSITY terse
SET client_min_messages = error;
\ir test/lib/sql_try.sql
\ir test/lib/carry_helpers.sql

CREATE ACCESS METHOD heap_again TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE amt (id int PRIMARY KEY, v text, tok fencing_token) USING heap_again;
INSERT INTO amt VALUES (1, 'one', 10), (2, 'two', 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM amt WHERE id = 1; COMMIT;
SELECT fencing_high_water('amt', '{"id": 1}') AS tombstone_before;

BEGIN;
SELECT pg_temp.copy_then('amt', 'amt_new', 'DROP ACCESS METHOD heap_again CASCADE; ALTER TABLE amt_new RENAME TO amt') AS swap;
COMMIT;
SELECT fencing_high_water('amt', '{"id": 1}') AS tombstone_after, pg_temp.fence_held('amt');
DROP TABLE IF EXISTS amt, amt_new;
DROP ACCESS METHOD IF EXISTS heap_again;
