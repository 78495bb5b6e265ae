-- A typed fenced table (CREATE TABLE t OF type) dropped by DROP TYPE ...
-- CASCADE, then replaced in the same transaction by a copy renamed to t: a
-- DROP TABLE there keeps the state for the copy; DROP TYPE CASCADE drops the
-- table without keeping it, so the tombstone is gone and a stale write is
-- accepted. fence_held is true when the state was kept or the step refused.
\set VERBOSITY terse
SET client_min_messages = error;
\ir test/lib/sql_try.sql

CREATE TYPE tt_row AS (id int, v text, tok fencing_token);
CREATE TABLE tt OF tt_row (PRIMARY KEY (id));
INSERT INTO tt VALUES (1, 'one', 10), (2, 'two', 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM tt WHERE id = 1; COMMIT;
SELECT fencing_high_water('tt', '{"id": 1}') AS tombstone_before;

BEGIN;
CREATE TABLE tt_new (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO tt_new SELECT * FROM tt;
SELECT pg_temp.try('DROP TYPE tt_row CASCADE; ALTER TABLE tt_new RENAME TO tt') AS swap;
COMMIT;

SELECT pg_temp.try($$SET LOCAL fencing.token = 12; INSERT INTO tt VALUES (1, 'stale', 12)$$) AS stale_insert
\gset
SELECT fencing_high_water('tt', '{"id": 1}') AS tombstone_after,
       :'stale_insert' <> 'ok' AS fence_held;
DROP TABLE IF EXISTS tt, tt_new;
DROP TYPE IF EXISTS tt_row;
