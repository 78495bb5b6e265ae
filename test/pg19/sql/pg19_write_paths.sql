-- Write paths that only PostgreSQL 19 has (run by the pg19 suite alone,
-- test/matrix/run.sh). Each behaves, for fencing, as the older statement
-- whose effect it has, or is refused.
\set VERBOSITY terse

-- 1. Tripwire: Debian's 19 (19~rc1) has neither UPDATE/DELETE ... FOR
-- PORTION OF nor ALTER TABLE ... MERGE PARTITIONS / SPLIT PARTITION. When a
-- 19 that has them runs this file, these lines change: then their fencing
-- (leftover rows of a stale FOR PORTION OF refused with it; every key's HWM
-- and tombstone kept across MERGE/SPLIT, or the command refused) must be
-- written and tested here before the expected output is updated.
CREATE TABLE wp_part (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE wp_part1 PARTITION OF wp_part FOR VALUES FROM (0) TO (10);
CREATE TABLE wp_part2 PARTITION OF wp_part FOR VALUES FROM (10) TO (20);
ALTER TABLE wp_part MERGE PARTITIONS (wp_part1, wp_part2) INTO wp_part12;
ALTER TABLE wp_part SPLIT PARTITION wp_part1 INTO
    (PARTITION wp_part1a FOR VALUES FROM (0) TO (5), PARTITION wp_part1b FOR VALUES FROM (5) TO (10));
UPDATE wp_part FOR PORTION OF v FROM 'a' TO 'b' SET v = 'x';
DELETE FROM wp_part FOR PORTION OF v FROM 'a' TO 'b';
DROP TABLE wp_part;

-- 2. INSERT ... ON CONFLICT DO SELECT behaves, for fencing, as DO NOTHING:
-- in row scope a conflicting row is not written, so nothing is checked or
-- raised for it, and a row that does not conflict is an INSERT like any
-- other.
CREATE TABLE wp_ds (id int PRIMARY KEY, v text, fence fencing_token);
INSERT INTO wp_ds VALUES (1, 'holder', 10), (2, 'holder', 20);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM wp_ds WHERE id = 2; COMMIT;  -- key 2: a tombstone at 20
-- A stale token on an existing key: no write, the row comes back unchanged
-- (DO NOTHING: no write, no row).
INSERT INTO wp_ds VALUES (1, 'stale', 5) ON CONFLICT (id) DO NOTHING RETURNING *;
INSERT INTO wp_ds VALUES (1, 'stale', 5) ON CONFLICT (id) DO SELECT RETURNING *;
INSERT INTO wp_ds VALUES (1, 'stale', 5) ON CONFLICT (id) DO SELECT FOR UPDATE RETURNING *;
BEGIN; SET LOCAL fencing.token = 5;
INSERT INTO wp_ds (id, v) VALUES (1, 'stale via fencing.token') ON CONFLICT (id) DO SELECT RETURNING *;
COMMIT;
-- A stale token on a deleted key: no conflict, so an INSERT, refused as one.
INSERT INTO wp_ds VALUES (2, 'stale resurrection', 19) ON CONFLICT (id) DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO wp_ds VALUES (2, 'stale resurrection', 19) ON CONFLICT (id) DO SELECT RETURNING *;
\echo :LAST_ERROR_SQLSTATE
-- A fresh token on the deleted key: inserted, the row's token is the HWM.
INSERT INTO wp_ds VALUES (2, 'fresh', 21) ON CONFLICT (id) DO SELECT RETURNING *;
SELECT * FROM wp_ds ORDER BY id;
SELECT fencing_high_water('wp_ds', '{"id": 1}') AS hwm_1, fencing_high_water('wp_ds', '{"id": 2}') AS hwm_2;
DROP TABLE wp_ds;

-- Strict mode: an INSERT that ends in DO SELECT wrote nothing and raised
-- nothing, so another transaction's HWM token stays refused to this one,
-- exactly as after DO NOTHING.
CREATE TABLE wp_strict (id int PRIMARY KEY, v text, fence fencing_token);
SELECT fencing_protect('wp_strict', strict => true);
INSERT INTO wp_strict VALUES (1, 'holder', 10);
BEGIN;
INSERT INTO wp_strict VALUES (1, 'nothing', 10) ON CONFLICT DO NOTHING;
UPDATE wp_strict SET v = 'after DO NOTHING, token 10', fence = 10 WHERE id = 1;
ROLLBACK;
BEGIN;
INSERT INTO wp_strict VALUES (1, 'select', 10) ON CONFLICT (id) DO SELECT RETURNING id, v;
UPDATE wp_strict SET v = 'after DO SELECT, token 10', fence = 10 WHERE id = 1;
ROLLBACK;
SELECT * FROM wp_strict;
DROP TABLE wp_strict;

-- Resource and table scopes judge the offered row's token before the
-- conflict is found (one HWM for every row): DO NOTHING and DO SELECT alike
-- refuse a stale token, conflicting row or not; the HWM stays.
CREATE TABLE wp_res (id int PRIMARY KEY, shard text, v text, fence fencing_token);
SELECT fencing_protect('wp_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'wp_shards');
INSERT INTO wp_res VALUES (1, 's1', 'holder', 10);
INSERT INTO wp_res VALUES (1, 's1', 'stale', 5) ON CONFLICT (id) DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO wp_res VALUES (1, 's1', 'stale', 5) ON CONFLICT (id) DO SELECT RETURNING id, v, fence;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO wp_res VALUES (2, 's1', 'stale new row', 5) ON CONFLICT (id) DO SELECT RETURNING id;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE wp_tab (id int PRIMARY KEY, v text, fence fencing_token);
SELECT fencing_protect('wp_tab', scope => 'table');
INSERT INTO wp_tab VALUES (1, 'holder', 10);
INSERT INTO wp_tab VALUES (1, 'stale', 5) ON CONFLICT (id) DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO wp_tab VALUES (1, 'stale', 5) ON CONFLICT (id) DO SELECT RETURNING id, v, fence;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO wp_tab VALUES (2, 'stale new row', 5) ON CONFLICT (id) DO SELECT RETURNING id;
\echo :LAST_ERROR_SQLSTATE
-- A current token: DO SELECT returns the row, writes nothing, raises nothing.
INSERT INTO wp_tab VALUES (1, 'current', 10) ON CONFLICT (id) DO SELECT RETURNING id, v, fence;
SELECT fencing_high_water('wp_res', '{"shard": "s1"}') AS res_hwm, fencing_high_water('wp_tab') AS tab_hwm;
SELECT * FROM wp_res ORDER BY id;
SELECT * FROM wp_tab ORDER BY id;

-- 3. REPACK (which replaces CLUSTER and VACUUM FULL) of a fenced table and
-- of every table of the extension loses no HWM, tombstone, policy or lease,
-- and leaves every guard in force.
CREATE TABLE wp_row (id int PRIMARY KEY, v text, fence fencing_token);
INSERT INTO wp_row SELECT g, 'v', g FROM generate_series(1, 200) g;
BEGIN; SET LOCAL fencing.token = 300; DELETE FROM wp_row WHERE id % 10 = 0; COMMIT;
SELECT fencing_acquire('wp-lease', 'holder-1', interval '1 hour') IS NOT NULL AS leased;
SELECT fencing_resource_advance('wp-res', 77);
CREATE FUNCTION wp_state() RETURNS TABLE (relname name, n bigint, digest text) LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT c.oid::regclass AS rel, c.relname FROM pg_class c
              WHERE c.relnamespace = 'fencing'::regnamespace AND c.relkind = 'r' ORDER BY 1 LOOP
        RETURN QUERY EXECUTE format(
            'SELECT %L::name, count(*), md5(coalesce(string_agg(t::text, %L ORDER BY t::text), %L)) FROM %s t',
            r.relname, ',', '', r.rel);
    END LOOP;
    RETURN QUERY SELECT 'wp_row'::name, count(*), md5(string_agg(t::text, ',' ORDER BY t.id)) FROM wp_row t;
END $$;
CREATE TEMP TABLE wp_before AS SELECT * FROM wp_state();
SELECT count(*) > 5 AS extension_tables FROM wp_before;
REPACK wp_row;
REPACK (CONCURRENTLY) wp_row;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT c.oid::regclass AS rel FROM pg_class c
              WHERE c.relnamespace = 'fencing'::regnamespace AND c.relkind = 'r' LOOP
        EXECUTE format('REPACK %s', r.rel);
    END LOOP;
END $$;
REPACK;
-- Every table of the extension and the fenced table hold what they held
-- (the extension's row counts depend on the tests run before this one).
SELECT b.relname, CASE WHEN b.relname = 'wp_row' THEN b.n END AS n,
       a.n IS NOT DISTINCT FROM b.n AND a.digest = b.digest AS unchanged
  FROM wp_before b LEFT JOIN wp_state() a USING (relname) ORDER BY b.relname;
SELECT count(*) AS guards_out_of_order FROM fencing_verify_guards();
SELECT count(*) AS tombstones FROM fencing.row_tombstone WHERE relid = 'wp_row'::regclass;
-- Stale writes are still refused: a tombstoned key, a live row, the lease.
INSERT INTO wp_row VALUES (10, 'stale resurrection', 9);
\echo :LAST_ERROR_SQLSTATE
UPDATE wp_row SET v = 'stale', fence = 4 WHERE id = 5;
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_acquire('wp-lease', 'holder-2', interval '1 hour') AS other_holder_token;
SELECT fencing_resource_high_water('wp-res') AS res_hwm;
UPDATE wp_row SET v = 'fresh', fence = 6 WHERE id = 5;
SELECT * FROM wp_row WHERE id IN (5, 10) ORDER BY id;
DROP TABLE wp_row, wp_res, wp_tab;
DROP FUNCTION wp_state();
