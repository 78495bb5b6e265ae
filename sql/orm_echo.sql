-- The ORM echo rule. ORMs that write every column back (Django's save(),
-- Hibernate's default full-row UPDATE) write the token column with the value
-- they read. Under fencing.token, an UPDATE that writes the row's current
-- token back into the token column carries the session token: the check uses
-- it and the column stores it. Any other value that differs from fencing.token
-- is still a conflict (22023); INSERT and writes without fencing.token are
-- unchanged.
\set VERBOSITY default

-- Row scope.
CREATE TABLE eo (item text PRIMARY KEY, stock int, note text, fence fencing_token);
INSERT INTO eo VALUES ('SKU-001', 10, 'a', 34), ('SKU-002', 5, 'b', 20);

-- Read at 34, write every column back under fencing.token = 35.
BEGIN;
SET LOCAL fencing.token = 35;
UPDATE eo SET item = 'SKU-001', stock = 9, note = 'a', fence = 34 WHERE item = 'SKU-001';
SELECT item, stock, fence FROM eo WHERE item = 'SKU-001';
COMMIT;

-- The stored column is the session token, not the echoed value.
SELECT fencing_high_water('eo', '{"item": "SKU-001"}') AS hwm;

-- A stale session token with an echo is refused as stale (TF001), with the
-- session token as the offered token.
BEGIN;
SET LOCAL fencing.token = 34;
UPDATE eo SET item = 'SKU-001', stock = 8, note = 'a', fence = 35 WHERE item = 'SKU-001';
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- A value that differs from both the row's token and fencing.token is a
-- conflict, above or below.
BEGIN;
SET LOCAL fencing.token = 36;
UPDATE eo SET stock = 8, fence = 37 WHERE item = 'SKU-001';
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 36;
UPDATE eo SET stock = 8, fence = 34 WHERE item = 'SKU-001';
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- Writing fencing.token itself is still fine.
BEGIN;
SET LOCAL fencing.token = 36;
UPDATE eo SET stock = 8, fence = 36 WHERE item = 'SKU-001';
COMMIT;
SELECT item, stock, fence FROM eo WHERE item = 'SKU-001';

-- Many rows, each echoing its own token: each carries the session token.
BEGIN;
SET LOCAL fencing.token = 37;
UPDATE eo SET stock = stock + 1, fence = fence;
SELECT item, stock, fence FROM eo ORDER BY item;
COMMIT;

-- A prepared full-row UPDATE, as Hibernate issues it, with the token bound as
-- a parameter (bigint, as a driver binds a long).
PREPARE full_row(text, int, text, bigint) AS
    UPDATE eo SET stock = $2, note = $3, fence = $4 WHERE item = $1;
BEGIN;
SET LOCAL fencing.token = 38;
EXECUTE full_row('SKU-001', 20, 'hibernate', 37);
SELECT item, stock, note, fence FROM eo WHERE item = 'SKU-001';
COMMIT;
BEGIN;
SET LOCAL fencing.token = 37;
EXECUTE full_row('SKU-001', 21, 'stale', 38);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
DEALLOCATE full_row;

-- Without fencing.token nothing changes: a token written into the column is
-- the statement's token, also when it equals the row's.
UPDATE eo SET stock = 1, fence = 38 WHERE item = 'SKU-001';
UPDATE eo SET stock = 1, fence = 37 WHERE item = 'SKU-001';
\echo :LAST_ERROR_SQLSTATE

-- INSERT has no current row: a token written into the column must still
-- agree with fencing.token.
BEGIN;
SET LOCAL fencing.token = 5;
INSERT INTO eo VALUES ('SKU-003', 1, 'c', 4);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- ON CONFLICT DO UPDATE's update path: echoing the existing row's token.
BEGIN;
SET LOCAL fencing.token = 39;
INSERT INTO eo VALUES ('SKU-002', 50, 'upsert', 39)
    ON CONFLICT (item) DO UPDATE SET stock = excluded.stock, fence = eo.fence;
SELECT item, stock, note, fence FROM eo WHERE item = 'SKU-002';
COMMIT;

-- A deleted row's echo is no echo: DELETE takes fencing.token as before.
BEGIN;
SET LOCAL fencing.token = 38;
DELETE FROM eo WHERE item = 'SKU-002';
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- Strict mode: the echo carries the session token, which must be above the
-- HWM, or equal to one this transaction raised.
CREATE TABLE es (id int PRIMARY KEY, val text, fence fencing_token);
SELECT fencing_protect('es', strict => true);
INSERT INTO es VALUES (1, 'x', 40);
BEGIN;
SET LOCAL fencing.token = 41;
UPDATE es SET id = 1, val = 'y', fence = 40 WHERE id = 1;
UPDATE es SET id = 1, val = 'z', fence = 41 WHERE id = 1;   -- echo of this transaction's own raise
SELECT * FROM es;
COMMIT;
-- Another transaction with the same token and a different payload: refused.
BEGIN;
SET LOCAL fencing.token = 41;
UPDATE es SET id = 1, val = 'w', fence = 41 WHERE id = 1;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- The same full row again (a retry of a write that landed): a replay.
BEGIN;
SET LOCAL fencing.token = 41;
UPDATE es SET id = 1, val = 'z', fence = 41 WHERE id = 1;
SELECT * FROM es;
COMMIT;

-- Resource scope: the echo is the row's token column, the check is the
-- shared HWM's.
CREATE TABLE er (id int PRIMARY KEY, shard text, val int, fence fencing_token);
SELECT fencing_protect('er', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'orm-echo');
INSERT INTO er VALUES (1, 's1', 0, 10), (2, 's1', 0, 10);
BEGIN;
SET LOCAL fencing.token = 12;
UPDATE er SET shard = 's1', val = 1, fence = 10 WHERE id = 1;
SELECT * FROM er ORDER BY id;
COMMIT;
SELECT fencing_resource_high_water('s1', 'orm-echo') AS hwm;
-- Row 2 still holds 10: echoing it under a stale session token is TF001.
BEGIN;
SET LOCAL fencing.token = 11;
UPDATE er SET shard = 's1', val = 2, fence = 10 WHERE id = 2;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 12;
UPDATE er SET val = 2, fence = 11 WHERE id = 2;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM fencing.resource_hwm WHERE namespace = 'orm-echo';
DELETE FROM fencing.resource_namespace WHERE name = 'orm-echo';

-- Table scope.
CREATE TABLE et (id int PRIMARY KEY, val int, fence fencing_token);
SELECT fencing_protect('et', scope => 'table');
INSERT INTO et VALUES (1, 0, 3);
BEGIN;
SET LOCAL fencing.token = 4;
UPDATE et SET id = 1, val = 1, fence = 3 WHERE id = 1;
SELECT * FROM et;
COMMIT;
BEGIN;
SET LOCAL fencing.token = 3;
UPDATE et SET id = 1, val = 2, fence = 4 WHERE id = 1;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('et') AS hwm;

-- Tokens at the top of the range round-trip exactly.
BEGIN;
SET LOCAL fencing.token = 9223372036854775807;
UPDATE eo SET stock = 0, fence = fence WHERE item = 'SKU-001';
SELECT fence FROM eo WHERE item = 'SKU-001';
COMMIT;

DROP TABLE eo, es, er, et;

-- A BEFORE trigger (sorting before the guard) that changes the primary key or
-- the resource column: the SET list no longer says what changed. A row moved
-- by a trigger onto a key deleted at 50 by a writer holding 20 must not land,
-- and a row moved out of a resource is a write to that resource too.
CREATE TABLE tk (id text PRIMARY KEY, body text, fence fencing_token);
INSERT INTO tk VALUES ('a', 'deleted', 50);
DELETE FROM tk WHERE id = 'a' AND set_config('fencing.token', '50', true) IS NOT NULL;
INSERT INTO tk VALUES ('A', 'legacy', 10);
CREATE FUNCTION tk_lower() RETURNS trigger LANGUAGE plpgsql
    AS $$ BEGIN NEW.id := lower(NEW.id); RETURN NEW; END $$;
CREATE TRIGGER a_lower BEFORE UPDATE ON tk FOR EACH ROW EXECUTE FUNCTION tk_lower();
-- The SET list names no key column: refused (0A000), the move could not be
-- rechecked after its index insertion.
BEGIN;
SET LOCAL fencing.token = 20;
UPDATE tk SET body = 'stale', fence = fence WHERE id = 'A';
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- Naming the key makes it a fenced move: stale against the tombstone.
BEGIN;
SET LOCAL fencing.token = 20;
UPDATE tk SET id = id, body = 'stale', fence = fence WHERE id = 'A';
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 60;
UPDATE tk SET id = id, body = 'moved', fence = fence WHERE id = 'A';
COMMIT;
SELECT * FROM tk;
SELECT fencing_high_water('tk', '{"id": "A"}') AS tombstone_of_A;
-- A trigger that changes no key column changes nothing.
BEGIN;
SET LOCAL fencing.token = 60;
UPDATE tk SET body = 'echo', fence = fence WHERE id = 'a';
COMMIT;
SELECT * FROM tk;

CREATE TABLE tr (id int PRIMARY KEY, shard text, val text, fence fencing_token);
SELECT fencing_protect('tr', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'orm-echo-move');
INSERT INTO tr VALUES (1, 'S1', 'x', 1);
SELECT fencing_resource_advance('S1', 100, 'orm-echo-move'),
       fencing_resource_advance('s1', 5, 'orm-echo-move');
CREATE FUNCTION tr_lower() RETURNS trigger LANGUAGE plpgsql
    AS $$ BEGIN NEW.shard := lower(NEW.shard); RETURN NEW; END $$;
CREATE TRIGGER a_lower BEFORE UPDATE ON tr FOR EACH ROW EXECUTE FUNCTION tr_lower();
-- Token 6 is above s1's HWM but below S1's, which the row leaves: TF001.
BEGIN;
SET LOCAL fencing.token = 6;
UPDATE tr SET val = 'stale', fence = fence WHERE id = 1;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 100;
UPDATE tr SET val = 'moved', fence = fence WHERE id = 1;
COMMIT;
SELECT * FROM tr;
SELECT fencing_resource_high_water('s1', 'orm-echo-move') AS s1_hwm;
DROP TABLE tk, tr;
DROP FUNCTION tk_lower(), tr_lower();
DELETE FROM fencing.resource_hwm WHERE namespace = 'orm-echo-move';
DELETE FROM fencing.resource_namespace WHERE name = 'orm-echo-move';
