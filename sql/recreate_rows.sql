-- A fenced table dropped and re-created in one transaction: the rows' own
-- tokens are part of what the table that takes the name must carry. A copy
-- that holds every row at its token or above is adopted; one that lacks a
-- row, or holds a lower token, is refused (40001); an empty table takes the
-- dropped rows as tombstones (row scope), as a DELETE of each would leave.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET client_min_messages = notice;

CREATE TABLE rr (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO rr VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30);

-- A copy that lacks row 3: refused.
BEGIN;
CREATE TABLE rr_new (id int PRIMARY KEY, v text, tok fencing_token, extra int);
INSERT INTO rr_new (id, v, tok) SELECT id, v, tok FROM rr WHERE id < 3;
DROP TABLE rr;
ALTER TABLE rr_new RENAME TO rr;
ROLLBACK;

-- A copy with a lower token for row 2: refused.
BEGIN;
CREATE TABLE rr_new (id int PRIMARY KEY, v text, tok fencing_token, extra int);
INSERT INTO rr_new (id, v, tok) SELECT id, v, CASE WHEN id = 2 THEN 5 ELSE tok END FROM rr;
DROP TABLE rr;
ALTER TABLE rr_new RENAME TO rr;
ROLLBACK;

-- The same inside a savepoint rolled back, then the complete copy: adopted.
BEGIN;
SAVEPOINT a;
DROP TABLE rr;
ROLLBACK TO a;
CREATE TABLE rr_new (id int PRIMARY KEY, v text, tok fencing_token, extra int);
INSERT INTO rr_new (id, v, tok) SELECT id, v, tok FROM rr;
DROP TABLE rr;
ALTER TABLE rr_new RENAME TO rr;
COMMIT;
SELECT id, v, tok, extra FROM rr ORDER BY id;
BEGIN; SET LOCAL fencing.token = 15; UPDATE rr SET v = 'stale' WHERE id = 2; ROLLBACK;

-- A copy with a higher token (a write after the DROP's copy, within the
-- migration) is adopted too.
BEGIN;
CREATE TABLE rr_new (id int PRIMARY KEY, v text, tok fencing_token, extra int);
INSERT INTO rr_new (id, v, tok) SELECT id, v, tok FROM rr;
UPDATE rr_new SET tok = 25 WHERE id = 2;
DROP TABLE rr;
ALTER TABLE rr_new RENAME TO rr;
COMMIT;

-- An empty table takes the name: each dropped row leaves its tombstone.
BEGIN;
DROP TABLE rr;
CREATE TABLE rr (id int PRIMARY KEY, v text, tok fencing_token);
COMMIT;
SELECT (fencing_high_water('rr', '{"id": 1}'))::text AS id1,
       (fencing_high_water('rr', '{"id": 2}'))::text AS id2,
       (fencing_high_water('rr', '{"id": 3}'))::text AS id3;
BEGIN; SET LOCAL fencing.token = 29; INSERT INTO rr VALUES (3, 'stale'); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 30; INSERT INTO rr VALUES (3, 'at the tombstone'); COMMIT;
INSERT INTO rr VALUES (4, 'new key', 1);

-- An empty table without the primary key cannot keep the tombstones:
-- refused, with the way to start afresh.
BEGIN;
DROP TABLE rr;
CREATE TABLE rr (id int, v text, tok fencing_token);
ROLLBACK;
BEGIN;
DROP TABLE rr;
SELECT fencing_forget_dropped('public.rr') > 0 AS forgotten;
CREATE TABLE rr (id int, v text, tok fencing_token);
COMMIT;
DROP TABLE rr;
-- Later tests read the reset log.
DELETE FROM fencing.reset_log WHERE target = 'dropped table public.rr';

-- Table scope: the rows compare as a multiset of tokens; an empty recreate
-- keeps the table HWM, which judges every write.
CREATE TABLE rt (id int, v text, tok fencing_token);
SELECT fencing_protect('rt', scope => 'table');
BEGIN; SET LOCAL fencing.token = 7; INSERT INTO rt VALUES (1, 'a'), (2, 'b'); COMMIT;
BEGIN; SET LOCAL fencing.token = 9; UPDATE rt SET v = 'b9' WHERE id = 2; COMMIT;
BEGIN;
CREATE TABLE rt_new (id int, v text, tok fencing_token);
INSERT INTO rt_new VALUES (1, 'a', 7), (2, 'b', 7);
DROP TABLE rt;
ALTER TABLE rt_new RENAME TO rt;
ROLLBACK;
BEGIN;
DROP TABLE rt;
CREATE TABLE rt (id int, v text, tok fencing_token);
COMMIT;
SELECT scope FROM fencing_protected WHERE table_name = 'rt'::regclass;
BEGIN; SET LOCAL fencing.token = 8; INSERT INTO rt VALUES (3, 'stale'); ROLLBACK;
DROP TABLE rt;

-- A key deleted from the old table after the copy: the new table would bring
-- the row back below the key's tombstone. Refused (40001).
CREATE TABLE rd (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO rd VALUES (1, 'one', 10), (2, 'two', 20);
BEGIN;
CREATE TABLE rd_new (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO rd_new SELECT * FROM rd;
SAVEPOINT s;
-- (as another session's DELETE would, committed before the DROP)
SET LOCAL fencing.token = 30;
DELETE FROM rd WHERE id = 2;
RESET fencing.token;
DROP TABLE rd;
ALTER TABLE rd_new RENAME TO rd;
ROLLBACK;
-- The same through fencing_transfer_state().
BEGIN;
CREATE TABLE rd_new (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO rd_new SELECT * FROM rd;
SET LOCAL fencing.token = 30;
DELETE FROM rd WHERE id = 2;
RESET fencing.token;
SELECT fencing_transfer_state('rd', 'rd_new');
ROLLBACK;
SELECT id, v, tok FROM rd ORDER BY id;
DROP TABLE rd;

-- A DROP keeps at most four times maintenance_work_mem of rows: past that
-- the adoption is refused, never judged on part of the rows.
CREATE TABLE rbig (id int PRIMARY KEY, tok fencing_token);
INSERT INTO rbig SELECT g, 1 FROM generate_series(1, 100000) g;
BEGIN;
SET LOCAL maintenance_work_mem = '1MB';
DROP TABLE rbig;
CREATE TABLE rbig (id int PRIMARY KEY, tok fencing_token);
ROLLBACK;
BEGIN;
SET LOCAL maintenance_work_mem = '64MB';
DROP TABLE rbig;
CREATE TABLE rbig (id int PRIMARY KEY, tok fencing_token);
SELECT count(*) AS tombstones FROM fencing.row_tombstone WHERE relid = 'rbig'::regclass;
ROLLBACK;
DROP TABLE rbig;
