-- ATTACH PARTITION of a table without a primary key (ATTACH builds the
-- parent's on it): its rows must be judged against the parent's tombstones
-- too, or a row below its key's tombstone lets a stale UPDATE through.
SET client_min_messages = warning;
CREATE TABLE u (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE u1 PARTITION OF u FOR VALUES FROM (0) TO (100);
SELECT fencing_protect('u');
INSERT INTO u VALUES (5, 'first', 20);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM u WHERE id = 5; COMMIT;
DROP TABLE u1;
-- A stale holder's row at 15, in a table with no primary key yet.
CREATE TABLE u2 (id int NOT NULL, v text, fence fencing_token);
INSERT INTO u2 VALUES (5, 'stale', 15);
\set VERBOSITY terse
ALTER TABLE u ATTACH PARTITION u2 FOR VALUES FROM (0) TO (100);
\set VERBOSITY default
BEGIN; SET LOCAL fencing.token = 16; UPDATE u SET v = 'stale 16' WHERE id = 5; COMMIT;
SELECT id, v, fence FROM u ORDER BY id;
-- An empty table without a primary key attaches (pg_partman's new children).
CREATE TABLE u3 (id int NOT NULL, v text, fence fencing_token);
ALTER TABLE u ATTACH PARTITION u3 FOR VALUES FROM (100) TO (200);
-- With the key added, the row is judged and refused by its tombstone.
ALTER TABLE u2 ADD PRIMARY KEY (id);
\set VERBOSITY terse
ALTER TABLE u ATTACH PARTITION u2 FOR VALUES FROM (0) TO (100);
\set VERBOSITY default
-- Written with a current token, it attaches.
BEGIN; SET LOCAL fencing.token = 21; UPDATE u2 SET v = 'current' WHERE id = 5; COMMIT;
ALTER TABLE u ATTACH PARTITION u2 FOR VALUES FROM (0) TO (100);
SELECT id, v, fence FROM u ORDER BY id;
DROP TABLE u, u2;
