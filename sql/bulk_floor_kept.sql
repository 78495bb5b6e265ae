-- Row scope: a bulk INSERT keeps the table floor it read for the rest of its
-- transaction. What raises that floor later in the same transaction must not
-- leave the old value kept: a key below the raised floor is refused, as it
-- is in a fresh transaction (each refusal in a savepoint, so that the
-- transaction and its raise commit). (1) A policy change carrying a table HWM into
-- the floor (table scope back to row scope: every key, deleted or never seen,
-- judged at least at the carried HWM). (2) fencing_transfer_state after the
-- copy into the new table (pg-osc's swap), moving the old table's floor (a
-- folded DELETE) to it. (3) A recreate (Alembic's batch: copy into a new
-- table, DROP the old, RENAME the new), which adopts the old table's floor.
SET client_min_messages = warning;
\set VERBOSITY terse
CREATE TABLE fkp (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('fkp');
BEGIN;
INSERT INTO fkp SELECT g, 1 FROM generate_series(1, 100) g;
SELECT fencing_protect('fkp', scope => 'table');
INSERT INTO fkp VALUES (1000, 50);
UPDATE fkp SET tok = 50;
SELECT fencing_protect('fkp', scope => 'row');
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'fkp'::regclass;
-- Refused: below the floor of 50.
SAVEPOINT stale;
INSERT INTO fkp VALUES (2000, 40);
ROLLBACK TO SAVEPOINT stale;
COMMIT;
SELECT count(*) AS rows_below_floor FROM fkp WHERE tok < 50;
-- A fresh transaction: refused.
INSERT INTO fkp VALUES (3000, 40);
DROP TABLE fkp;
-- (2) The old table's DELETE of 2000 keys at 50 is folded into its floor.
CREATE TABLE tso (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('tso');
SELECT fencing_enable_retirement('tso'::regclass);
INSERT INTO tso SELECT g, 50 FROM generate_series(1, 3000) g;
BEGIN;
SET LOCAL fencing.token = 50;
DELETE FROM tso WHERE id <= 2000;
COMMIT;
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'tso'::regclass;
-- The new table: fenced on creation (auto_protect); the copy keeps its floor.
CREATE TABLE tsn (id int PRIMARY KEY, tok fencing_token);
BEGIN;
INSERT INTO tsn SELECT id, tok FROM tso;
SELECT fencing_transfer_state('tso', 'tsn');
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'tsn'::regclass;
-- Refused: key 100 was deleted at 50.
SAVEPOINT stale;
INSERT INTO tsn VALUES (100, 40);
ROLLBACK TO SAVEPOINT stale;
COMMIT;
SELECT count(*) AS removed_keys_back FROM tsn WHERE id <= 2000;
-- A fresh transaction: refused.
INSERT INTO tsn VALUES (101, 40);
DROP TABLE tso, tsn;
-- (3) The old table's DELETE of 2000 keys at 50 is folded into its floor.
CREATE TABLE rc (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('rc');
SELECT fencing_enable_retirement('rc'::regclass);
INSERT INTO rc SELECT g, 50 FROM generate_series(1, 3000) g;
BEGIN;
SET LOCAL fencing.token = 50;
DELETE FROM rc WHERE id <= 2000;
COMMIT;
BEGIN;
CREATE TABLE _alembic_tmp_rc (id int PRIMARY KEY, tok fencing_token, extra int);
INSERT INTO _alembic_tmp_rc (id, tok) SELECT id, tok FROM rc;
DROP TABLE rc;
ALTER TABLE _alembic_tmp_rc RENAME TO rc;
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'rc'::regclass;
-- Refused: key 100 was deleted at 50.
SAVEPOINT stale;
INSERT INTO rc (id, tok) VALUES (100, 40);
ROLLBACK TO SAVEPOINT stale;
COMMIT;
SELECT count(*) AS removed_keys_back FROM rc WHERE id <= 2000;
-- A fresh transaction: refused.
INSERT INTO rc (id, tok) VALUES (101, 40);
DROP TABLE rc;
