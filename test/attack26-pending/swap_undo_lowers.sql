-- Undoing a swap as docs/migrations.md says (fencing_transfer_state back to
-- the old table) after a fenced write to the new table: row-scope HWMs live
-- in the rows, the old table still has the row at 5, and nothing checks it.
-- Wanted: the transfer back refused (the target's row holds a lower token
-- than the source's), or the row's token carried. main at attack26: the
-- stale UPDATE at 60 is accepted (UPDATE 1; row shows 'stale at 60').
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
