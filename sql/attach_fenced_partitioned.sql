-- ATTACH PARTITION of a partitioned table fenced on its own: it gives up its
-- policy for its new parent's, as an attached plain table does. Kept, it was
-- the home of its leaves' guards again after any DDL on it, and a stale write
-- below the parent's tombstone was accepted there.
SET client_min_messages = notice;
CREATE TABLE n (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE n1 PARTITION OF n FOR VALUES FROM (0) TO (100);
SELECT fencing_protect('n');
CREATE TABLE n4 (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE n4a PARTITION OF n4 FOR VALUES FROM (300) TO (400);
SELECT relid::regclass FROM fencing.protected ORDER BY relid::regclass::text;
ALTER TABLE n ATTACH PARTITION n4 FOR VALUES FROM (300) TO (400);
SELECT relid::regclass FROM fencing.protected ORDER BY relid::regclass::text;
SELECT * FROM fencing_verify_guards();
-- A tombstone under n, from a holder at 20.
INSERT INTO n VALUES (310, 'a', 20);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM n WHERE id = 310; COMMIT;
-- DDL on n4 and a new partition under it keep n's policy.
ALTER TABLE n4 ALTER COLUMN v SET DEFAULT 'x';
CREATE TABLE n4b PARTITION OF n4 FOR VALUES FROM (400) TO (500);
\set VERBOSITY terse
BEGIN; SET LOCAL fencing.token = 15; INSERT INTO n VALUES (310, 'stale', 15); COMMIT;
\set VERBOSITY default
SELECT * FROM n ORDER BY id;
SELECT * FROM fencing_verify_guards();
-- Detached, n4 is fenced on its own again.
SET client_min_messages = warning;
ALTER TABLE n DETACH PARTITION n4;
SELECT relid::regclass FROM fencing.protected ORDER BY relid::regclass::text;
SELECT * FROM fencing_verify_guards();
DROP TABLE n, n4;
-- The same after DETACH and ATTACH again of a partitioned partition (a
-- detached partition is fenced on its own): a partition created under it
-- took its guard from the detached policy.
CREATE TABLE d (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE d2 PARTITION OF d FOR VALUES FROM (100) TO (200) PARTITION BY RANGE (id);
CREATE TABLE d2a PARTITION OF d2 FOR VALUES FROM (100) TO (150);
SELECT fencing_protect('d');
ALTER TABLE d DETACH PARTITION d2;
ALTER TABLE d ATTACH PARTITION d2 FOR VALUES FROM (100) TO (200);
SELECT relid::regclass FROM fencing.protected ORDER BY relid::regclass::text;
INSERT INTO d VALUES (120, 'a', 50);
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM d WHERE id = 120; COMMIT;
CREATE TABLE d2b PARTITION OF d2 FOR VALUES FROM (150) TO (200);
\set VERBOSITY terse
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO d VALUES (120, 'stale', 10); COMMIT;
\set VERBOSITY default
SELECT * FROM d ORDER BY id;
SELECT * FROM fencing_verify_guards();
DROP TABLE d;
