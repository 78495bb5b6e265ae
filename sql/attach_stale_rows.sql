-- ATTACH PARTITION of a table whose live rows carry tokens below the
-- parent's tombstones or floor for the same keys: a row-scope UPDATE is
-- judged by the row's own token, so once such a row is attached, a writer
-- whose token is below the key's recorded HWM (a tombstone, or the floor it
-- was retired into) must still be refused.
SET client_min_messages = warning;

-- stale_update(table, id, token): 'accepted' (a row written), 'no row', or
-- the refusal's SQLSTATE. Either fix (the ATTACH refused, or the write) passes.
CREATE FUNCTION stale_update(t regclass, k int, tok bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM set_config('fencing.token', tok::text, true);
    EXECUTE format('UPDATE %s SET v = %L WHERE id = %s', t, 'stale ' || tok, k);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN CASE WHEN n > 0 THEN 'accepted' ELSE 'no row' END;
EXCEPTION WHEN others THEN
    RETURN SQLSTATE;
END $$;

-- attach(parent, partition): the ATTACH, or the refusal's SQLSTATE.
CREATE FUNCTION attach(parent regclass, part regclass) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (0) TO (100)',
                   parent, part);
    RETURN 'attached';
EXCEPTION WHEN others THEN
    RETURN SQLSTATE;
END $$;

-- 1. pg_partman-style retention keeping the table, then an undo: the old
-- partition is detached (fenced on its own with a copy of the state), the
-- range lives on in a new partition where key 5 is written at 30, deleted
-- and retired into the floor; a stale holder writes the detached table at
-- 12 (its own state allows it); the old partition is attached back.
CREATE TABLE g (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE g_old PARTITION OF g FOR VALUES FROM (0) TO (100);
SELECT fencing_protect('g');
SELECT fencing_enable_retirement('g'::regclass);
INSERT INTO g VALUES (5, 'first', 10);
ALTER TABLE g DETACH PARTITION g_old;
CREATE TABLE g_new PARTITION OF g FOR VALUES FROM (0) TO (100);
INSERT INTO g VALUES (5, 'newer holder', 30);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM g WHERE id = 5; COMMIT;
SELECT fencing_retire('g'::regclass, '0 s') AS retired;
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'g'::regclass;
DROP TABLE g_new;
SELECT stale_update('g_old', 5, 12) AS detached_write;
SELECT attach('g', 'g_old') IN ('attached', '55000') AS attach_ran;
-- The key's HWM was 30 (accepted, then deleted, then retired): 13 is stale.
SELECT stale_update('g', 5, 13) = 'accepted' AS stale_accepted;

-- 2. The same without retirement: the parent keeps a tombstone at 20 for a
-- key a fresh (never fenced) table brings along at 15.
CREATE TABLE h (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE h1 PARTITION OF h FOR VALUES FROM (0) TO (100);
SELECT fencing_protect('h');
INSERT INTO h VALUES (5, 'first', 10);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM h WHERE id = 5; COMMIT;
DROP TABLE h1;
CREATE TABLE x (id int PRIMARY KEY, v text, fence fencing_token);
INSERT INTO x VALUES (5, 'brought along', 15);
ALTER TABLE h ATTACH PARTITION x FOR VALUES FROM (0) TO (100);
SELECT attach('h', 'x') IN ('attached', '55000') AS attach_ran;
SELECT stale_update('h', 5, 16) = 'accepted' AS stale_accepted;

-- 2b. A row without a token (written while the guards were off) under the
-- same tombstone: its next writer's token would be its first.
CREATE TABLE xn (id int PRIMARY KEY, v text, fence fencing_token);
SET session_replication_role = replica;
INSERT INTO xn VALUES (5, 'no token', NULL);
RESET session_replication_role;
SELECT attach('h', 'xn') AS attach_result;
SELECT stale_update('h', 5, 6) = 'accepted' AS stale_accepted;
DROP TABLE xn;

-- 3. Rows at or above the home's state still attach: a key without a
-- tombstone in a home without a floor, and a row above the floor.
CREATE TABLE x2 (id int PRIMARY KEY, v text, fence fencing_token);
INSERT INTO x2 VALUES (7, 'new key', 1);
DROP TABLE IF EXISTS x;
SELECT attach('h', 'x2') AS plain_attach;
CREATE TABLE y2 (id int PRIMARY KEY, v text, fence fencing_token);
INSERT INTO y2 VALUES (8, 'above the floor', 30);
DROP TABLE IF EXISTS g_old;
SELECT attach('g', 'y2') AS floor_attach;

DROP TABLE IF EXISTS g, g_old, h, x, x2, y2;
DROP FUNCTION stale_update(regclass, int, bigint), attach(regclass, regclass);
