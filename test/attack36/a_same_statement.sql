-- attack36 A: tombstones written inside the bulk statement itself.
\set VERBOSITY terse
DROP TABLE IF EXISTS w1, w2, w3, w4, w5, w6, w8, w9 CASCADE;
DROP FUNCTION IF EXISTS del_w3(int), w5_adv();
-- A1 writable CTE: DELETE key 3 (token 50) and re-insert it at 20 in the same statement, key 3 not first
CREATE TABLE w1 (id int PRIMARY KEY, fence fencing_token);
INSERT INTO w1 VALUES (1, 50), (2, 50), (3, 50);
WITH d AS (DELETE FROM w1 WHERE id = 3 RETURNING id) INSERT INTO w1 VALUES (10, 20), (11, 20), (3, 20);
SELECT 'A1', * FROM w1 WHERE id = 3;
-- A1b: many rows deleted (deferred / fold with retirement) then re-inserted
CREATE TABLE w2 (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_enable_retirement('w2'::regclass);
INSERT INTO w2 SELECT g, 50 FROM generate_series(1, 1500) g;
WITH d AS (DELETE FROM w2 WHERE id > 10 RETURNING id) INSERT INTO w2 SELECT 5000 + g, 20 FROM generate_series(1,3) g UNION ALL SELECT 700, 20;
SELECT 'A1b', * FROM w2 WHERE id = 700;
-- A2 function in the SELECT list deleting (writes tombstone) a key inserted later in the statement
CREATE TABLE w3 (id int PRIMARY KEY, fence fencing_token);
INSERT INTO w3 VALUES (1, 50), (8, 50);
CREATE FUNCTION del_w3(k int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN DELETE FROM w3 WHERE id = k; RETURN k; END $$;
INSERT INTO w3 SELECT CASE WHEN g = 3 THEN del_w3(8) + 0 * g ELSE g + 100 END, 20 FROM generate_series(1, 5) g;
SELECT 'A2', * FROM w3 ORDER BY id;
-- A3 ON CONFLICT DO UPDATE bulk: keys deleted earlier in the transaction at 50, re-inserted at 20
CREATE TABLE w4 (id int PRIMARY KEY, fence fencing_token);
INSERT INTO w4 SELECT g, 50 FROM generate_series(1, 10) g;
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM w4 WHERE id > 5; COMMIT;
INSERT INTO w4 SELECT g, 60 FROM generate_series(1, 3) g ON CONFLICT (id) DO UPDATE SET fence = excluded.fence;
INSERT INTO w4 SELECT g, 20 FROM generate_series(100, 103) g UNION ALL SELECT 7, 20 ON CONFLICT (id) DO UPDATE SET fence = excluded.fence;
SELECT 'A3', * FROM w4 WHERE id IN (7, 100) ORDER BY id;
-- A4 user AFTER trigger (STABLE: no command counter step) deleting a later key via fencing_advance
CREATE TABLE w5 (id int PRIMARY KEY, fence fencing_token);
CREATE FUNCTION w5_adv() RETURNS trigger LANGUAGE plpgsql STABLE AS $$
BEGIN IF NEW.id = 2 THEN PERFORM fencing_advance('w5', 100, jsonb_build_object('id', 9)); END IF; RETURN NULL; END $$;
CREATE TRIGGER zzz_adv AFTER INSERT ON w5 FOR EACH ROW EXECUTE FUNCTION w5_adv();
INSERT INTO w5 SELECT g, 20 FROM generate_series(1, 5) g;
SELECT 'A4 hwm9', fencing_high_water('w5', jsonb_build_object('id', 9));
INSERT INTO w5 VALUES (9, 20);
SELECT 'A4', * FROM w5 WHERE id = 9;
-- A5 COPY with stale rows scattered (key 3 and 7 deleted at 50)
CREATE TABLE w6 (id int PRIMARY KEY, fence fencing_token);
INSERT INTO w6 VALUES (3, 50), (7, 50);
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM w6; COMMIT;
COPY w6 FROM PROGRAM 'seq 1 9 | sed "s/$/,20/"' WITH (FORMAT csv);
SELECT 'A5', count(*) FROM w6;
-- A6 partitioned, several leaves: the stale key (deleted at 50) in the second leaf, rows of the first leaf first
CREATE TABLE w8 (id int PRIMARY KEY, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE w8_1 PARTITION OF w8 FOR VALUES FROM (0) TO (100);
CREATE TABLE w8_2 PARTITION OF w8 FOR VALUES FROM (100) TO (200);
INSERT INTO w8 VALUES (150, 50);
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM w8 WHERE id = 150; COMMIT;
INSERT INTO w8 SELECT g, 20 FROM generate_series(1, 5) g UNION ALL SELECT 150, 20;
COPY w8 FROM PROGRAM 'printf "1,20\n2,20\n3,20\n150,20\n"' WITH (FORMAT csv);
INSERT INTO w8_2 SELECT g, 20 FROM generate_series(101, 105) g UNION ALL SELECT 150, 20;
SELECT 'A6', count(*) FROM w8;
-- A7 retirement moved the tombstones into the floor (no tombstone stored): floor alone must refuse
CREATE TABLE w9 (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_enable_retirement('w9'::regclass);
INSERT INTO w9 SELECT g, 50 FROM generate_series(1, 1500) g;
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM w9 WHERE id > 10; COMMIT;
SELECT 'A7 tombstones', count(*) FROM fencing.row_tombstone WHERE relid = 'w9'::regclass;
INSERT INTO w9 SELECT g, 20 FROM generate_series(2000, 2005) g;
INSERT INTO w9 SELECT g, 60 FROM generate_series(2000, 2005) g;
SELECT 'A7', count(*) FROM w9 WHERE id >= 2000;
-- A2b/A1c: token switched mid-statement by a SELECT-list function (DELETE at 50, key re-inserted at 20 later in the statement), wCTE DELETE feeding the INSERT
DROP TABLE IF EXISTS w10, w11 CASCADE; DROP FUNCTION IF EXISTS del_w10(int);
CREATE TABLE w10 (id int PRIMARY KEY, fence fencing_token);
INSERT INTO w10 VALUES (1, 10), (8, 10);
CREATE FUNCTION del_w10(k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM set_config('fencing.token', '50', true); DELETE FROM w10 WHERE id = k;
PERFORM set_config('fencing.token', '20', true); RETURN k; END $$;
BEGIN; SET LOCAL fencing.token = 20;
INSERT INTO w10 (id) SELECT CASE g WHEN 3 THEN del_w10(8) + 100 WHEN 4 THEN 8 ELSE g + 100 END FROM generate_series(1, 5) g;
COMMIT;
SELECT 'A2', id, fence, fencing_high_water('w10', jsonb_build_object('id', 8)) FROM w10 ORDER BY id;
CREATE TABLE w11 (id int PRIMARY KEY, fence fencing_token);
INSERT INTO w11 VALUES (1, 10), (3, 10);
BEGIN; SET LOCAL fencing.token = 50;
WITH d AS (DELETE FROM w11 WHERE id = 3 RETURNING id)
INSERT INTO w11 (id) SELECT x FROM (SELECT 10 AS x UNION ALL SELECT 11 UNION ALL SELECT id FROM d) s;
COMMIT;
SELECT 'A1c', id, fence FROM w11 ORDER BY id;
