-- Row scope: a bulk INSERT keeps the table floor it read for the rest of its
-- transaction. A policy change in that transaction that carries a table HWM
-- into the floor (table scope back to row scope: every key, deleted or never
-- seen, judged at least at the carried HWM) must not leave the old value
-- kept: a new key below the carried HWM is refused, as it is in a fresh
-- transaction.
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
INSERT INTO fkp VALUES (2000, 40);
COMMIT;
SELECT count(*) AS rows_below_floor FROM fkp WHERE tok < 50;
-- A fresh transaction: refused.
INSERT INTO fkp VALUES (3000, 40);
DROP TABLE fkp;
