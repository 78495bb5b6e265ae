-- fencing_advance of a key whose row row-level security hides from the
-- caller: the lookup as the caller found no row, so the key's tombstone was
-- written and true returned, while the live row kept its lower token, by
-- which its writers are judged (a writer at 16 got through after an advance
-- to 30). Refused instead (42501), and nothing written.
SET client_min_messages = warning;
CREATE ROLE fence_hidden_advancer;
CREATE TABLE hid (id int PRIMARY KEY, v text, fence fencing_token);
SELECT fencing_protect('hid');
BEGIN; SET LOCAL fencing.token = 15; INSERT INTO hid VALUES (5, 'row', 15), (1, 'seen', 15); COMMIT;
ALTER TABLE hid ENABLE ROW LEVEL SECURITY;
CREATE POLICY sees_small ON hid USING (id < 5);
GRANT SELECT, UPDATE ON hid TO fence_hidden_advancer;
SET ROLE fence_hidden_advancer;
\set VERBOSITY terse
SELECT fencing_advance('hid', 30, '{"id": 5}') AS hidden_advanced;
\set VERBOSITY default
-- A key it sees is advanced; a key without any row gets its tombstone.
SELECT fencing_advance('hid', 30, '{"id": 1}') AS seen_advanced;
SELECT fencing_advance('hid', 30, '{"id": 7}') AS absent_advanced;
RESET ROLE;
SELECT count(*) AS tombstones FROM fencing.row_tombstone WHERE relid = 'hid'::regclass;
BEGIN; SET LOCAL fencing.token = 16; UPDATE hid SET v = 'stale at 16' WHERE id = 5; COMMIT;
SELECT id, v, fence FROM hid ORDER BY id;
DROP TABLE hid;
DROP ROLE fence_hidden_advancer;
