-- Widening (or narrowing) an integer primary key of a row-scope table keeps
-- its tombstones: ALTER COLUMN ... TYPE rekeys them in the same transaction
-- (int -> bigint: Django's BigAutoField, Rails' change_column). Before, it
-- was refused with 55000 and the only way through discarded them.
\set VERBOSITY default
SET client_min_messages = notice;
CREATE TABLE kw (id int PRIMARY KEY, bal int, fence fencing_token);
INSERT INTO kw SELECT g, 0, 10 FROM generate_series(1, 12) g;
INSERT INTO kw VALUES (-5, 0, 10);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM kw WHERE id IN (2, 3, 10, -5); COMMIT;
ALTER TABLE kw ALTER COLUMN id TYPE bigint;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'kw'::regclass AND attname = 'id';
-- Every deleted key is still fenced, negative ones included.
SELECT k, fencing_high_water('kw', jsonb_build_object('id', k)) AS hwm
  FROM unnest(ARRAY[2, 3, 10, -5, 4]) k;
BEGIN; SET LOCAL fencing.token = 15; INSERT INTO kw VALUES (2, 666); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 19; INSERT INTO kw VALUES (-5, 666); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- A key above the int range, deleted, and back to int: refused (22003), kept.
BEGIN; SET LOCAL fencing.token = 30; INSERT INTO kw VALUES (5000000000, 0); DELETE FROM kw WHERE id = 5000000000; COMMIT;
ALTER TABLE kw ALTER COLUMN id TYPE int;
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('kw', '{"id": 5000000000}') AS big_key;
BEGIN; SET LOCAL fencing.token = 31; DELETE FROM kw WHERE id = 1; COMMIT;
SELECT fencing_reset('kw', '{"id": 5000000000}');
ALTER TABLE kw ALTER COLUMN id TYPE int;
SELECT fencing_high_water('kw', '{"id": 3}') AS hwm3, fencing_high_water('kw', '{"id": 1}') AS hwm1;
BEGIN; SET LOCAL fencing.token = 30; INSERT INTO kw VALUES (1, 666); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- A change that replaces the values (USING) or leaves the integers: refused.
ALTER TABLE kw ALTER COLUMN id TYPE bigint USING id + 1;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE kw ALTER COLUMN id TYPE text;
\echo :LAST_ERROR_SQLSTATE
-- A rolled-back ALTER rolls the rekeying back with it.
BEGIN; ALTER TABLE kw ALTER COLUMN id TYPE bigint; ROLLBACK;
SELECT fencing_high_water('kw', '{"id": 3}') AS hwm3_after_rollback;
-- A composite key: only the changed column's part is rekeyed.
CREATE TABLE kw2 (a smallint, b int, v int, fence fencing_token, PRIMARY KEY (a, b));
INSERT INTO kw2 VALUES (1, 7, 0, 5), (-1, 8, 0, 5);
BEGIN; SET LOCAL fencing.token = 9; DELETE FROM kw2; COMMIT;
ALTER TABLE kw2 ALTER COLUMN a TYPE int, ALTER COLUMN b TYPE bigint;
SELECT fencing_high_water('kw2', '{"a": 1, "b": 7}') AS k1, fencing_high_water('kw2', '{"a": -1, "b": 8}') AS k2;
BEGIN; SET LOCAL fencing.token = 8; INSERT INTO kw2 VALUES (-1, 8, 0); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS reset_log_rows FROM fencing.reset_log WHERE target LIKE '%kw%';
DROP TABLE kw, kw2;
DELETE FROM fencing.reset_log WHERE target LIKE 'public.kw%';
