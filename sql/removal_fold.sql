-- Removals of many rows in row scope (pg/hwm/removed_rows.hpp): with the
-- table's retirement enabled, a DELETE of more than 1000 rows, a TRUNCATE, a
-- DROP or DETACH of a partition fold the removed keys into the table's floor
-- instead of a tombstone per row; smaller removals, and every removal without
-- retirement, leave exact tombstones, written set-based. A stale re-insert of
-- a removed key is refused either way; a floor is never lowered.
\set VERBOSITY default
SET client_min_messages = warning;

-- Runs each statement in its own subtransaction with fencing.token = token;
-- 'ok' or the SQLSTATE it failed with, for each, space-separated.
CREATE FUNCTION rm_try(token bigint, VARIADIC stmts text[]) RETURNS text
    LANGUAGE plpgsql AS $$
DECLARE
    stmt text;
    outcome text[] := '{}';
BEGIN
    PERFORM set_config('fencing.token', token::text, true);
    FOREACH stmt IN ARRAY stmts LOOP
        BEGIN
            EXECUTE stmt;
            outcome := outcome || 'ok'::text;
        EXCEPTION WHEN OTHERS THEN
            outcome := outcome || SQLSTATE;
        END;
    END LOOP;
    RETURN array_to_string(outcome, ' ');
END $$;
CREATE FUNCTION rm_state(rel regclass, OUT floor bigint, OUT tombstones bigint,
                         OUT max_tombstone bigint) LANGUAGE sql AS $$
    SELECT (SELECT f.floor FROM fencing.tombstone_floor f WHERE f.relid = rel),
           count(*), max(t.hwm) FROM fencing.row_tombstone t WHERE t.relid = rel
$$;

-- 6000 rows at 10, retirement enabled (no automatic policy).
CREATE TABLE rd (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO rd SELECT g, 'seed', 10 FROM generate_series(1, 6000) g;
SELECT fencing_protect('rd');
SELECT fencing_enable_retirement('rd'::regclass);

-- A single-row DELETE keeps an exact tombstone (15); the key comes back at 16.
SELECT rm_try(15, $$DELETE FROM rd WHERE id = 7$$);
SELECT * FROM rm_state('rd');
SELECT rm_try(16, $$INSERT INTO rd VALUES (7, 'back', 16)$$);

-- A DELETE of exactly 1000 rows: exact tombstones, no fold.
SELECT rm_try(18, $$DELETE FROM rd WHERE id BETWEEN 2001 AND 3000$$);
SELECT * FROM rm_state('rd');
SELECT rm_try(17, $$INSERT INTO rd VALUES (2500, 'stale', 17)$$) AS stale_exact;

-- 1001 rows and more: folded into the floor (20), no tombstone written.
SELECT rm_try(20, $$DELETE FROM rd WHERE id <= 1500$$);
SELECT * FROM rm_state('rd');
-- Stale re-inserts refused: a key with no tombstone (8), and one whose own
-- tombstone (7, at 15) is below the floor; at the floor or above admitted.
SELECT rm_try(19, $$INSERT INTO rd VALUES (8, 'stale', 19)$$) AS stale_8,
       rm_try(17, $$INSERT INTO rd VALUES (7, 'stale', 17)$$) AS stale_7,
       rm_try(20, $$INSERT INTO rd VALUES (8, 'fresh', 20)$$) AS fresh_8,
       rm_try(21, $$INSERT INTO rd VALUES (7, 'fresh', 21)$$) AS fresh_7;
-- The innocent client: a new key's token issued before the fold is below it.
SELECT rm_try(19, $$INSERT INTO rd VALUES (9000, 'new', 19)$$) AS new_key_below_floor;
SELECT fencing_high_water('rd', '{"id": 8}') AS hwm_8, fencing_high_water('rd', '{"id": 100}') AS hwm_100;

-- A fold below the floor (rows at 10, removed under 12) leaves it where it
-- is: never lowered.
SELECT rm_try(12, $$DELETE FROM rd WHERE id BETWEEN 3001 AND 6000$$);
SELECT * FROM rm_state('rd');

-- In one transaction: the DELETE's fold is in place for its next statement.
BEGIN;
SET LOCAL fencing.token = 30;
INSERT INTO rd SELECT g, 'x', 30 FROM generate_series(7001, 8500) g;
DELETE FROM rd WHERE id > 7000;
SELECT rm_try(29, $$INSERT INTO rd VALUES (7001, 'stale', 29)$$) AS stale_same_xact;
COMMIT;
SELECT * FROM rm_state('rd');

-- A DELETE refused halfway (row 10700 at 50), past the threshold: the
-- statement raises nothing, in a transaction that goes on and commits.
SELECT rm_try(40, $$INSERT INTO rd SELECT g, 'y', 40 FROM generate_series(9001, 11000) g$$);
SELECT rm_try(50, $$UPDATE rd SET tok = 50 WHERE id = 10700$$);
SELECT rm_try(45, $$DELETE FROM rd WHERE id > 9000$$) AS refused_halfway;
SELECT * FROM rm_state('rd');

-- TRUNCATE folds its rows (highest 50) too.
TRUNCATE rd;
SELECT * FROM rm_state('rd');
SELECT rm_try(49, $$INSERT INTO rd VALUES (10700, 'stale', 49)$$) AS stale_truncated,
       rm_try(50, $$INSERT INTO rd VALUES (10700, 'fresh', 50)$$) AS fresh_truncated;

-- Under REPEATABLE READ: exact tombstones, no fold (a floor raised after the
-- snapshot could only be locked with 40001).
SELECT rm_try(55, $$INSERT INTO rd SELECT g, 'r', 55 FROM generate_series(30001, 31500) g$$);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET LOCAL fencing.token = 56;
DELETE FROM rd WHERE id > 30000;
COMMIT;
SELECT * FROM rm_state('rd');
SELECT rm_try(55, $$INSERT INTO rd VALUES (30001, 'stale', 55)$$) AS stale_repeatable_read;

-- Retirement disabled: no fold, exact tombstones.
SELECT fencing_disable_retirement('rd'::regclass);
SELECT rm_try(60, $$INSERT INTO rd SELECT g, 'z', 60 FROM generate_series(20001, 21500) g$$);
SELECT rm_try(61, $$DELETE FROM rd WHERE id > 20000$$);
SELECT * FROM rm_state('rd');
SELECT rm_try(60, $$INSERT INTO rd VALUES (20001, 'stale', 60)$$) AS stale_disabled;

-- Without retirement, a two-column key: exact tombstones, set-based, under
-- the same keys a single-row DELETE writes.
CREATE TABLE rk (a int, b text, tok fencing_token, PRIMARY KEY (a, b));
INSERT INTO rk SELECT g, 'k' || g, 10 FROM generate_series(1, 1500) g;
SELECT fencing_protect('rk');
SELECT rm_try(11, $$DELETE FROM rk WHERE a = 1$$);
SELECT rm_try(12, $$DELETE FROM rk WHERE a > 1$$);
SELECT * FROM rm_state('rk');
SELECT count(DISTINCT key) AS distinct_keys, count(*) FILTER (WHERE cardinality(key) = 2) AS two_column_keys
  FROM fencing.row_tombstone WHERE relid = 'rk'::regclass;
SELECT rm_try(11, $$INSERT INTO rk VALUES (2, 'k2', 11)$$) AS stale_rk,
       rm_try(10, $$INSERT INTO rk VALUES (1, 'k1', 10)$$) AS stale_rk_single,
       rm_try(12, $$INSERT INTO rk VALUES (1500, 'k1500', 12)$$) AS fresh_rk;
SELECT fencing_high_water('rk', '{"a": 700, "b": "k700"}') AS hwm_700;

-- DROP and DETACH of a partition of more than 1000 rows fold into the
-- partitioned table's floor; the keys come back in the default partition
-- only at the floor or above.
CREATE TABLE rp (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE rp_1 PARTITION OF rp FOR VALUES FROM (1) TO (2001);
CREATE TABLE rp_2 PARTITION OF rp FOR VALUES FROM (2001) TO (4001);
CREATE TABLE rp_d PARTITION OF rp DEFAULT;
INSERT INTO rp SELECT g, 10 FROM generate_series(1, 4000) g;
SELECT fencing_protect('rp');
SELECT fencing_enable_retirement('rp'::regclass);
SELECT rm_try(33, $$UPDATE rp SET tok = 33 WHERE id = 1500$$);
DROP TABLE rp_1;
SELECT * FROM rm_state('rp');
SELECT rm_try(32, $$INSERT INTO rp VALUES (5, 32)$$) AS stale_dropped,
       rm_try(33, $$INSERT INTO rp VALUES (5, 33)$$) AS fresh_dropped;
SELECT rm_try(44, $$UPDATE rp SET tok = 44 WHERE id = 3000$$);
ALTER TABLE rp DETACH PARTITION rp_2;
SELECT * FROM rm_state('rp');
SELECT rm_try(43, $$INSERT INTO rp VALUES (2500, 43)$$) AS stale_detached,
       rm_try(44, $$INSERT INTO rp VALUES (2500, 44)$$) AS fresh_detached;
-- The detached table keeps its rows, fenced on its own.
SELECT count(*) FROM rp_2;

DROP TABLE rd, rk, rp, rp_2;
DROP FUNCTION rm_try(bigint, text[]);
DROP FUNCTION rm_state(regclass);
