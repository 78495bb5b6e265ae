-- attack36 B: folded removals reading the highest token from an index.
-- Each case: floor after the removal must equal the highest live token.
\set VERBOSITY terse
CREATE OR REPLACE FUNCTION chk(t regclass, want bigint) RETURNS text LANGUAGE sql AS
$$ SELECT CASE WHEN coalesce((SELECT floor::text::bigint FROM fencing.tombstone_floor WHERE relid = t), -1) >= want
  THEN 'HELD' ELSE 'HOLE floor=' || coalesce((SELECT floor::text FROM fencing.tombstone_floor WHERE relid = t), 'none') || ' want ' || want END $$;
-- B1 update to a higher token in the same xact as TRUNCATE
CREATE TABLE b1 (id int PRIMARY KEY, tok fencing_token); CREATE INDEX ON b1 (tok);
SELECT fencing_enable_retirement('b1'::regclass); INSERT INTO b1 SELECT g, g FROM generate_series(1,1500) g;
BEGIN; SET LOCAL fencing.token = 9000; UPDATE b1 SET tok = 9000 WHERE id = 3; TRUNCATE b1; COMMIT;
SELECT 'B1', chk('b1', 9000);
-- B2 NULLS FIRST ascending, and many NULL tokens
CREATE TABLE b2 (id int PRIMARY KEY); INSERT INTO b2 SELECT g FROM generate_series(1,600) g;
ALTER TABLE b2 ADD COLUMN tok fencing_token; CREATE INDEX ON b2 (tok NULLS FIRST);
SELECT fencing_enable_retirement('b2'::regclass); INSERT INTO b2 SELECT g, g FROM generate_series(1000,2500) g;
TRUNCATE b2; SELECT 'B2', chk('b2', 2500);
-- B3 DESC NULLS LAST
CREATE TABLE b3 (id int PRIMARY KEY); INSERT INTO b3 SELECT g FROM generate_series(1,600) g;
ALTER TABLE b3 ADD COLUMN tok fencing_token; CREATE INDEX ON b3 (tok DESC NULLS LAST);
SELECT fencing_enable_retirement('b3'::regclass); INSERT INTO b3 SELECT g, g FROM generate_series(1000,2500) g;
TRUNCATE b3; SELECT 'B3', chk('b3', 2500);
-- B4 multi-column (tok, id) and (id, tok)
CREATE TABLE b4 (id int PRIMARY KEY, tok fencing_token); CREATE INDEX ON b4 (id, tok); CREATE INDEX ON b4 (tok, id);
SELECT fencing_enable_retirement('b4'::regclass); INSERT INTO b4 SELECT g, (g*7919)%5000 FROM generate_series(1,3000) g;
SELECT max(tok) AS m4 FROM b4 \gset
TRUNCATE b4; SELECT 'B4', chk('b4', :m4);
-- B5 HOT updates (non-indexed column) plus a deleted top token in same xact
CREATE TABLE b5 (id int PRIMARY KEY, v int, tok fencing_token); CREATE INDEX ON b5 (tok);
SELECT fencing_enable_retirement('b5'::regclass); INSERT INTO b5 SELECT g, 0, g FROM generate_series(1,1500) g;
BEGIN; SET LOCAL fencing.token = 1500; UPDATE b5 SET v = 1 WHERE id > 1000; DELETE FROM b5 WHERE id = 1500; TRUNCATE b5; COMMIT;
SELECT 'B5', chk('b5', 1500);
-- B6 savepoint: higher token inserted then rolled back, then an update in another savepoint kept
CREATE TABLE b6 (id int PRIMARY KEY, tok fencing_token); CREATE INDEX ON b6 (tok);
SELECT fencing_enable_retirement('b6'::regclass); INSERT INTO b6 SELECT g, g FROM generate_series(1,1500) g;
BEGIN; SAVEPOINT a; SET LOCAL fencing.token = 7000; INSERT INTO b6 VALUES (9999, 7000); ROLLBACK TO a;
SET LOCAL fencing.token = 6000; UPDATE b6 SET tok = 6000 WHERE id = 7; TRUNCATE b6; COMMIT;
SELECT 'B6', chk('b6', 6000);
-- B7 index built CONCURRENTLY just before
CREATE TABLE b7 (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_enable_retirement('b7'::regclass); INSERT INTO b7 SELECT g, g FROM generate_series(1,1500) g;
CREATE INDEX CONCURRENTLY b7_tok ON b7 (tok);
BEGIN; SET LOCAL fencing.token = 8000; UPDATE b7 SET tok = 8000 WHERE id = 1; TRUNCATE b7; COMMIT;
SELECT 'B7', chk('b7', 8000);
-- B8 partitioned: index on one leaf only, DROP of the parent's leaves
CREATE TABLE b8 (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE b8_1 PARTITION OF b8 FOR VALUES FROM (0) TO (5000);
CREATE TABLE b8_2 PARTITION OF b8 FOR VALUES FROM (5000) TO (10000);
CREATE INDEX ON b8_2 (tok);
SELECT fencing_enable_retirement('b8'::regclass); INSERT INTO b8 SELECT g, g FROM generate_series(1,9000) g;
BEGIN; SET LOCAL fencing.token = 20000; UPDATE b8 SET tok = 20000 WHERE id = 4000; SET LOCAL fencing.token = 19000; UPDATE b8 SET tok = 19000 WHERE id = 6000; DROP TABLE b8_1, b8_2; COMMIT;
SELECT 'B8', chk('b8', 20000);
-- B9 column order differs on the attached leaf (dropped column) with index
CREATE TABLE b9 (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE b9_1 (x int, id int NOT NULL, tok fencing_token); ALTER TABLE b9_1 DROP COLUMN x;
CREATE INDEX ON b9_1 (tok);
ALTER TABLE b9 ATTACH PARTITION b9_1 FOR VALUES FROM (0) TO (5000);
SELECT fencing_enable_retirement('b9'::regclass); INSERT INTO b9 SELECT g, g FROM generate_series(1,3000) g;
BEGIN; SET LOCAL fencing.token = 30000; UPDATE b9 SET tok = 30000 WHERE id = 5; TRUNCATE b9_1; COMMIT;
SELECT 'B9', chk('b9', 30000);
-- B10 bigint token column? (declared via policy)
SELECT 'done';
-- B10 bigint token column (protected explicitly), DESC index, update to higher token in the same xact
CREATE TABLE b10 (id int PRIMARY KEY, tok bigint); CREATE INDEX ON b10 (tok DESC);
SELECT fencing_protect('b10', token_column => 'tok');
SELECT fencing_enable_retirement('b10'::regclass); INSERT INTO b10 SELECT g, g FROM generate_series(1,1500) g;
BEGIN; SET LOCAL fencing.token = 4000; UPDATE b10 SET tok = 4000 WHERE id = 2; TRUNCATE b10; COMMIT;
SELECT 'B10', chk('b10', 4000);
-- B11 index on ONLY the parent (invalid, no leaf index) then DROP of the leaf
CREATE TABLE b11 (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE b11_1 PARTITION OF b11 FOR VALUES FROM (0) TO (5000);
CREATE INDEX ON ONLY b11 (tok);
SELECT fencing_enable_retirement('b11'::regclass); INSERT INTO b11 SELECT g, g FROM generate_series(1,2000) g;
DROP TABLE b11_1; SELECT 'B11', chk('b11', 2000);
-- B12 deferrable unique index on the token, rows inserted in the same xact before TRUNCATE
CREATE TABLE b12 (id int PRIMARY KEY, tok fencing_token UNIQUE DEFERRABLE INITIALLY DEFERRED);
SELECT fencing_enable_retirement('b12'::regclass); INSERT INTO b12 SELECT g, g FROM generate_series(1,1500) g;
BEGIN; SET LOCAL fencing.token = 5000; INSERT INTO b12 VALUES (5000, 5000); TRUNCATE b12; COMMIT;
SELECT 'B12', chk('b12', 5000);
