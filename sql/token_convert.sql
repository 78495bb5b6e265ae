-- A table fenced on a bigint token column converts it to fencing_token in
-- one statement, in place: every row's HWM and every tombstone kept, fenced
-- throughout (the ALTER holds ACCESS EXCLUSIVE; the guard stays). Before, it
-- was refused with 0A000 and the ways around it opened an unfenced window.
\set VERBOSITY default
SET client_min_messages = notice;
CREATE TABLE tc (id int PRIMARY KEY, v int, version bigint);
SELECT fencing_protect('tc', token_column => 'version', require_token => false);
INSERT INTO tc VALUES (1, 0, 100), (2, 0, 7), (3, 0, NULL), (4, 0, 50);
BEGIN; SET LOCAL fencing.token = 60; DELETE FROM tc WHERE id = 4; COMMIT;
ALTER TABLE tc ALTER COLUMN version TYPE fencing_token;
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'tc'::regclass AND attname = 'version';
SELECT * FROM tc ORDER BY id;
SELECT table_name, token_column, scope, guard_ok FROM fencing_protected WHERE table_name = 'tc'::regclass;
SELECT * FROM fencing_verify_guards();
SELECT k, fencing_high_water('tc', jsonb_build_object('id', k)) FROM unnest(ARRAY[1, 2, 4]) k;
BEGIN; SET LOCAL fencing.token = 99; UPDATE tc SET v = 666 WHERE id = 1; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 59; INSERT INTO tc VALUES (4, 666); ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 101; UPDATE tc SET v = 1 WHERE id = 1; COMMIT;
SELECT * FROM tc WHERE id = 1;
-- Also with USING the column cast to fencing_token, and in table scope.
CREATE TABLE tc2 (id int PRIMARY KEY, v int, version bigint);
SELECT fencing_protect('tc2', token_column => 'version', scope => 'table');
BEGIN; SET LOCAL fencing.token = 40; INSERT INTO tc2 VALUES (1, 0); COMMIT;
ALTER TABLE tc2 ALTER COLUMN version TYPE fencing_token USING version::fencing_token;
SELECT fencing_high_water('tc2') AS table_hwm;
BEGIN; SET LOCAL fencing.token = 39; UPDATE tc2 SET v = 666; ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- A USING that replaces the values, or another target type: still refused.
CREATE TABLE tc3 (id int PRIMARY KEY, v int, version bigint);
SELECT fencing_protect('tc3', token_column => 'version', require_token => false);
INSERT INTO tc3 VALUES (1, 0, 100);
ALTER TABLE tc3 ALTER COLUMN version TYPE fencing_token USING 0;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE tc3 ALTER COLUMN version TYPE numeric;
\echo :LAST_ERROR_SQLSTATE
-- The conversion keeps the values only: a USING of the column itself.
ALTER TABLE tc3 ALTER COLUMN version TYPE fencing_token USING (version);
SELECT * FROM tc3;
-- The unfenced table's conversion works as before (and fences it).
CREATE TABLE tc4 (id int PRIMARY KEY, version bigint);
INSERT INTO tc4 VALUES (1, 5);
ALTER TABLE tc4 ALTER COLUMN version TYPE fencing_token;
SELECT table_name, token_column, scope FROM fencing_protected WHERE table_name = 'tc4'::regclass;
DROP TABLE tc, tc2, tc3, tc4;
