-- fencing_transfer_state() refuses a target whose rows hold lower tokens than
-- the source's in row scope (a swap undone after the new table was written;
-- a copy that missed a write): the rows are where row scope keeps its HWMs.
\set VERBOSITY default
SET client_min_messages = notice;
CREATE TABLE u (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO u VALUES (1, 'a', 5);
CREATE TABLE u_new (LIKE u INCLUDING ALL);
INSERT INTO u_new SELECT * FROM u;
BEGIN; SELECT fencing_transfer_state('u', 'u_new');
ALTER TABLE u RENAME TO u_old; ALTER TABLE u_new RENAME TO u; COMMIT;
BEGIN; SET LOCAL fencing.token = 100; UPDATE u SET v = 'at 100' WHERE id = 1; COMMIT;
BEGIN; SELECT fencing_transfer_state('u', 'u_old');
ALTER TABLE u RENAME TO u_new; ALTER TABLE u_old RENAME TO u; COMMIT;
BEGIN; SET LOCAL fencing.token = 60; UPDATE u SET v = 'stale at 60' WHERE id = 1; COMMIT;
SELECT id, v, tok FROM u;
-- the way through: a complete copy (the rows with their tokens) transfers
CREATE TABLE u_back (LIKE u INCLUDING ALL);
INSERT INTO u_back SELECT * FROM u;
BEGIN; SELECT fencing_transfer_state('u', 'u_back');
ALTER TABLE u RENAME TO u_gone; ALTER TABLE u_back RENAME TO u; COMMIT;
BEGIN; SET LOCAL fencing.token = 60; UPDATE u SET v = 'stale at 60' WHERE id = 1; COMMIT;
SELECT id, v, tok FROM u;
DROP TABLE u, u_old, u_gone;
