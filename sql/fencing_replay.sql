-- Replay-safe retries (strict mode). A client whose COMMIT timed out does not
-- know whether its write landed. In strict mode a token equal to the HWM is
-- admitted only to the transaction that raised the HWM to it, so a retry with
-- the same token used to be refused even when the first attempt had landed.
-- Now an UPDATE with a token equal to the HWM whose new row is identical to
-- the stored row (every column, binary, generated columns excepted) is a
-- replay: a no-op success. Anything else with that token is still refused.
SET client_min_messages = warning;

CREATE TABLE rp (id int PRIMARY KEY, stock int, note text, fence fencing_token);
SELECT fencing_protect('rp', strict => true);
INSERT INTO rp VALUES (1, 10, 'a', 33);

-- The first attempt lands (the client never hears back).
BEGIN; SET LOCAL fencing.token = 34; UPDATE rp SET stock = 9 WHERE id = 1 RETURNING *; COMMIT;
-- Transparent mode: the retry with the same token and payload reports its row.
BEGIN; SET LOCAL fencing.token = 34; UPDATE rp SET stock = 9 WHERE id = 1 RETURNING *; COMMIT;
-- The token written in the statement itself: the same.
UPDATE rp SET stock = 9, fence = 34 WHERE id = 1 RETURNING *;
-- The same token with a different payload is stale.
BEGIN; SET LOCAL fencing.token = 34; UPDATE rp SET stock = 8 WHERE id = 1; ROLLBACK;
UPDATE rp SET note = 'b', fence = 34 WHERE id = 1;
-- A relative change is not a replay: the retry would write 8 over 9. Its
-- refusal tells the client the first attempt landed.
BEGIN; SET LOCAL fencing.token = 34; UPDATE rp SET stock = stock - 1 WHERE id = 1; ROLLBACK;
-- A replay is not a raise: the retrying transaction may not go on to write
-- something else with the token.
BEGIN;
SET LOCAL fencing.token = 34;
UPDATE rp SET stock = 9 WHERE id = 1 RETURNING *;
UPDATE rp SET stock = 7 WHERE id = 1;
ROLLBACK;
-- The transaction that raised the HWM still writes as before.
BEGIN;
SET LOCAL fencing.token = 35;
UPDATE rp SET stock = 8 WHERE id = 1;
UPDATE rp SET stock = 8 WHERE id = 1;
UPDATE rp SET stock = 9 WHERE id = 1;
COMMIT;
SELECT * FROM rp ORDER BY id;

-- fenced_update(): 1 row for a replay, 0 for a different payload.
SELECT fenced_update('rp', 36, '{"id": 1}', '{"stock": 6, "note": "c"}') AS first;
SELECT fenced_update('rp', 36, '{"id": 1}', '{"stock": 6, "note": "c"}') AS replay;
SELECT fenced_update('rp', 36, '{"id": 1}', '{"stock": 6}') AS replay_subset;
SELECT fenced_update('rp', 36, '{"id": 1}', '{"stock": 5}') AS different;
SELECT * FROM rp ORDER BY id;

-- fenced_upsert(): a new key, then its replay; an existing key, then its replay.
SELECT fenced_upsert('rp', 37, '{"id": 2, "stock": 20, "note": "new"}') AS first_insert;
SELECT fenced_upsert('rp', 37, '{"id": 2, "stock": 20, "note": "new"}') AS replay;
SELECT fenced_upsert('rp', 37, '{"id": 2, "stock": 21, "note": "new"}') AS different;
SELECT fenced_upsert('rp', 38, '{"id": 1, "stock": 4, "note": "d"}') AS first_update;
SELECT fenced_upsert('rp', 38, '{"id": 1, "stock": 4, "note": "d"}') AS replay;
SELECT * FROM rp ORDER BY id;

-- INSERT ... ON CONFLICT DO UPDATE: the retry takes the update path and is a
-- replay; a different payload is stale.
INSERT INTO rp VALUES (3, 30, 'x', 39)
    ON CONFLICT (id) DO UPDATE SET stock = excluded.stock, note = excluded.note, fence = excluded.fence
    RETURNING *;
INSERT INTO rp VALUES (3, 30, 'x', 39)
    ON CONFLICT (id) DO UPDATE SET stock = excluded.stock, note = excluded.note, fence = excluded.fence
    RETURNING *;
INSERT INTO rp VALUES (3, 31, 'x', 39)
    ON CONFLICT (id) DO UPDATE SET stock = excluded.stock, note = excluded.note, fence = excluded.fence
    RETURNING *;
BEGIN;
SET LOCAL fencing.token = 39;
INSERT INTO rp (id, stock, note) VALUES (3, 30, 'x')
    ON CONFLICT (id) DO UPDATE SET stock = excluded.stock, note = excluded.note
    RETURNING *;
COMMIT;
-- A plain INSERT of a row that landed is a duplicate, as without fencing:
-- 23505, not a silent success (and not TF001).
INSERT INTO rp VALUES (3, 30, 'x', 39);
\echo :LAST_ERROR_SQLSTATE
-- MERGE's UPDATE action is an UPDATE like any other.
BEGIN;
SET LOCAL fencing.token = 39;
MERGE INTO rp USING (VALUES (3, 30)) AS s(id, stock) ON rp.id = s.id
    WHEN MATCHED THEN UPDATE SET stock = s.stock;
\echo merged :ROW_COUNT
COMMIT;
SELECT * FROM rp ORDER BY id;

-- DELETE: a retried DELETE that landed finds no row: 0 rows, no error. A
-- DELETE of a row that exists is never a no-op, so an equal token is refused.
BEGIN; SET LOCAL fencing.token = 40; DELETE FROM rp WHERE id = 3 RETURNING id; COMMIT;
BEGIN; SET LOCAL fencing.token = 40; DELETE FROM rp WHERE id = 3 RETURNING id; COMMIT;
SELECT fenced_delete('rp', 40, '{"id": 3}') AS retried_delete;
BEGIN; SET LOCAL fencing.token = 37; DELETE FROM rp WHERE id = 2; ROLLBACK;
SELECT fenced_delete('rp', 37, '{"id": 2}') AS equal_token_delete;
-- A tombstone has no payload: writing its key back with its token is refused.
BEGIN; SET LOCAL fencing.token = 40; INSERT INTO rp VALUES (3, 30, 'x'); ROLLBACK;
SELECT fenced_upsert('rp', 40, '{"id": 3, "stock": 30, "note": "x"}') AS onto_tombstone;
SELECT fencing_high_water('rp', '{"id": 3}') AS tombstone;

-- A retry after a newer holder's write is below the HWM: refused, even when
-- it would write what is stored.
BEGIN; SET LOCAL fencing.token = 41; UPDATE rp SET stock = 3 WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 38; UPDATE rp SET stock = 4, note = 'd' WHERE id = 1; ROLLBACK;
BEGIN; SET LOCAL fencing.token = 38; UPDATE rp SET stock = 3 WHERE id = 1; ROLLBACK;
SELECT fenced_upsert('rp', 38, '{"id": 1, "stock": 4, "note": "d"}') AS after_newer_holder;
SELECT fenced_update('rp', 38, '{"id": 1}', '{"stock": 3}') AS after_newer_holder;
SELECT * FROM rp ORDER BY id;

-- Which columns count: every column, compared byte for byte (numeric 9.5 is
-- not 9.50, which reads back differently); generated columns are computed
-- from the others and not compared; a TOASTed value is compared detoasted.
CREATE TABLE rc (id int PRIMARY KEY, price numeric, body text,
                 twice numeric GENERATED ALWAYS AS (price * 2) STORED, fence fencing_token);
SELECT fencing_protect('rc', strict => true);
ALTER TABLE rc ADD COLUMN gone int;
ALTER TABLE rc DROP COLUMN gone;
BEGIN;
SET LOCAL fencing.token = 50;
INSERT INTO rc (id, price, body)
    SELECT 1, 9.50, string_agg(md5(i::text), '') FROM generate_series(1, 400) i;
COMMIT;
SELECT pg_relation_size(reltoastrelid) > 0 AS body_toasted FROM pg_class WHERE oid = 'rc'::regclass;
BEGIN;
SET LOCAL fencing.token = 50;
UPDATE rc SET price = 9.50, body = (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 400) i)
 WHERE id = 1 RETURNING id, price, twice, fence;
COMMIT;
BEGIN; SET LOCAL fencing.token = 50; UPDATE rc SET price = 9.5 WHERE id = 1; ROLLBACK;
BEGIN; SET LOCAL fencing.token = 50; UPDATE rc SET body = body || '' WHERE id = 1 RETURNING id; COMMIT;
BEGIN; SET LOCAL fencing.token = 50; UPDATE rc SET body = NULL WHERE id = 1; ROLLBACK;
SELECT id, price, twice, octet_length(body), fence FROM rc;
DROP TABLE rc;

-- A row-scope table without a primary key has no replays: strict mode knows
-- its rows only by the version the raising transaction wrote.
CREATE TABLE rn (v int, fence fencing_token);
SELECT fencing_protect('rn', strict => true);
INSERT INTO rn VALUES (1, 60);
BEGIN; SET LOCAL fencing.token = 60; UPDATE rn SET v = 1; ROLLBACK;
DROP TABLE rn;

-- Resource scope: an UPDATE whose row is unchanged (its token column already
-- holds the offered token) is a replay; a row whose token column holds a
-- lower token would change, so it is refused. INSERTs are judged against the
-- shared HWM before PostgreSQL knows of a conflict: an upsert retry there is
-- refused (use fenced_update() for retries in resource and table scope).
CREATE TABLE rr (id int PRIMARY KEY, shard text, v int, fence fencing_token);
SELECT fencing_protect('rr', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'replay-strict', strict => true);
INSERT INTO rr VALUES (1, 'a', 1, 70), (2, 'a', 2, 70);
BEGIN; SET LOCAL fencing.token = 71; UPDATE rr SET v = 10 WHERE id = 1 RETURNING *; COMMIT;
SELECT fenced_update('rr', 71, '{"id": 1}', '{"v": 10}') AS replay;
SELECT fenced_update('rr', 71, '{"id": 1}', '{"v": 11}') AS different;
SELECT fenced_update('rr', 71, '{"id": 2}', '{"v": 2}') AS row_at_lower_token;
BEGIN; SET LOCAL fencing.token = 71; UPDATE rr SET v = 10 WHERE id = 1 RETURNING *; COMMIT;
BEGIN; SET LOCAL fencing.token = 71; UPDATE rr SET v = 10, shard = 'b' WHERE id = 1; ROLLBACK;
SELECT fenced_upsert('rr', 71, '{"id": 1, "shard": "a", "v": 10}') AS upsert_retry;
SELECT fencing_resource_high_water('a', 'replay-strict') AS hwm;
SELECT * FROM rr ORDER BY id;
DROP TABLE rr;
DELETE FROM fencing.resource_hwm WHERE namespace = 'replay-strict';
DELETE FROM fencing.resource_namespace WHERE name = 'replay-strict';

-- Table scope: the same rule as resource scope.
CREATE TABLE rt (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('rt', scope => 'table', strict => true);
INSERT INTO rt VALUES (1, 1, 80);
BEGIN; SET LOCAL fencing.token = 81; UPDATE rt SET v = 2 WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 81; UPDATE rt SET v = 2 WHERE id = 1 RETURNING *; COMMIT;
BEGIN; SET LOCAL fencing.token = 81; UPDATE rt SET v = 3 WHERE id = 1; ROLLBACK;
SELECT * FROM rt;
DROP TABLE rt;

-- Non-strict tables are unchanged: an equal token is admitted whatever the
-- payload, a lower one is refused even with the stored payload.
CREATE TABLE rl (id int PRIMARY KEY, v int, fence fencing_token);
INSERT INTO rl VALUES (1, 1, 90);
BEGIN; SET LOCAL fencing.token = 91; UPDATE rl SET v = 2 WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 91; UPDATE rl SET v = 3 WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 90; UPDATE rl SET v = 3 WHERE id = 1; ROLLBACK;
SELECT fenced_update('rl', 90, '{"id": 1}', '{"v": 3}') AS lower_same_payload;
SELECT * FROM rl;
DROP TABLE rl;
DROP TABLE rp;
