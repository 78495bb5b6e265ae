-- attack36 A: tombstones written inside the bulk statement itself.
\set VERBOSITY terse
DROP TABLE IF EXISTS w1, w2, w3, w4, w5 CASCADE;
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
