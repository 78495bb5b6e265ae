-- Tombstone reads (the guard's lookup, the AFTER INSERT recheck after
-- in-flight writers, fencing_high_water()) go through
-- fencing.row_tombstone_lookup, a hash index on array_append(key, relid::text)
-- (sql/fencing--1.2--1.3.sql), when row_tombstone has it. A hash index
-- returns every row whose hash value matches: each one is rechecked. Without
-- the index (a database at 1.2) the primary key is probed; with any other
-- index (or another index under its name) the reads go through SQL. Every
-- path must give the same answers: many tables with the same key values,
-- thousands of tombstones, and keys whose hash values really collide.
--
-- A database of its own, so that row_tombstone holds only this test's rows.
\set VERBOSITY terse
\set SHOW_CONTEXT never
SELECT current_database() AS regress_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS fencing_tomb_lookup;
CREATE DATABASE fencing_tomb_lookup;
\c fencing_tomb_lookup
\set VERBOSITY terse
\set SHOW_CONTEXT never
SET client_min_messages = warning;
SET stats_fetch_consistency = none;
CREATE EXTENSION fencing;
SELECT am.amname, pg_get_indexdef(i.indexrelid) LIKE '%array_append(key, ((relid)::oid)::text)%'
       AS on_key_and_relid
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
 WHERE c.relname = 'row_tombstone_lookup' AND i.indrelid = 'fencing.row_tombstone'::regclass;

-- One INSERT, always rolled back: 'ok' or the SQLSTATE it failed with. A NULL
-- token inserts without one (judged by the AFTER INSERT recheck).
CREATE FUNCTION try_insert(tbl regclass, k int, token bigint) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        IF token IS NULL THEN
            EXECUTE format('INSERT INTO %s (id) VALUES ($1)', tbl) USING k;
        ELSE
            EXECUTE format('INSERT INTO %s VALUES ($1, $2)', tbl) USING k, token;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'P0004';
    EXCEPTION WHEN assert_failure THEN
        RETURN 'ok';
    WHEN OTHERS THEN
        RETURN SQLSTATE;
    END;
END $$;

CREATE FUNCTION fence_delete(tbl regclass, k int, token bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('fencing.token', token::text, true);
    EXECUTE format('DELETE FROM %s WHERE id = $1', tbl) USING k;
END $$;

-- Many tables, the same key values: ids 1..3 deleted with 10, 20, 30 in
-- t_a, t_b, t_c (a table's hash values differ from another's by the relid).
CREATE TABLE t_a (id int PRIMARY KEY, fence fencing_token);
CREATE TABLE t_b (id int PRIMARY KEY, fence fencing_token);
CREATE TABLE t_c (id int PRIMARY KEY, fence fencing_token);
-- Token-less inserts are judged below: these tables are open to them.
SELECT count(fencing_protect(t::regclass, require_token => false)) AS opened
  FROM unnest(ARRAY['t_a', 't_b', 't_c']) t;
INSERT INTO t_a SELECT i, 1 FROM generate_series(1, 3) i;
INSERT INTO t_b SELECT i, 1 FROM generate_series(1, 3) i;
INSERT INTO t_c SELECT i, 1 FROM generate_series(1, 3) i;
BEGIN;
SELECT count(fence_delete('t_a', i, 10)) + count(fence_delete('t_b', i, 20))
       + count(fence_delete('t_c', i, 30)) AS deleted
  FROM generate_series(1, 3) i;
COMMIT;

-- Thousands of tombstones in one table (many rows per hash bucket): id
-- deleted with 100 + id % 50; ids above 5000 were never there.
CREATE TABLE t_many (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('t_many', require_token => false);
INSERT INTO t_many SELECT i, 1 FROM generate_series(1, 5000) i;
BEGIN;
SELECT count(fence_delete('t_many', i, 100 + i % 50)) AS deleted FROM generate_series(1, 5000) i;
COMMIT;

-- Keys of one table whose hash values in the lookup index are equal (found
-- among 400,000 candidates: about 18 pairs expected). Of each pair, a was
-- deleted with 10; b with 20 (odd pairs) or never there (even pairs).
CREATE TABLE t_coll (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('t_coll', require_token => false);
CREATE TABLE coll_pairs AS
SELECT row_number() OVER (ORDER BY min(i)) AS n, min(i) AS a, max(i) AS b
  FROM generate_series(1, 400000) i
 GROUP BY hash_array(array_append(ARRAY[encode(int4send(i), 'hex')],
                                  't_coll'::regclass::oid::text))
HAVING count(*) = 2;
SELECT count(*) >= 2 AS collisions_found FROM coll_pairs;
INSERT INTO t_coll SELECT a, 1 FROM coll_pairs UNION ALL SELECT b, 1 FROM coll_pairs WHERE n % 2 = 1;
BEGIN;
SELECT count(fence_delete('t_coll', a, 10)) AS deleted FROM coll_pairs;
SELECT count(fence_delete('t_coll', b, 20)) AS deleted FROM coll_pairs WHERE n % 2 = 1;
COMMIT;
-- The tombstones of a pair share their hash value in the index too.
SELECT bool_and(ta.h = tb.h) AS same_hash_in_index
  FROM coll_pairs p,
       LATERAL (SELECT hash_array(array_append(key, relid::oid::text)) AS h
                  FROM fencing.row_tombstone WHERE relid = 't_coll'::regclass
                   AND key = ARRAY[encode(int4send(p.a), 'hex')]) ta,
       LATERAL (SELECT hash_array(array_append(key, relid::oid::text)) AS h
                  FROM fencing.row_tombstone WHERE relid = 't_coll'::regclass
                   AND key = ARRAY[encode(int4send(p.b), 'hex')]) tb
 WHERE p.n % 2 = 1;

-- Every check, as (check, result, how many): the same on every path.
CREATE FUNCTION verdicts() RETURNS TABLE (what text, result text, n bigint)
LANGUAGE sql AS $$
    SELECT what, result, count(*) FROM (
        SELECT format('%s id %s token %s', t, i, tok) AS what, try_insert(t::regclass, i, tok) AS result
          FROM unnest(ARRAY['t_a', 't_b', 't_c']) t, generate_series(1, 4) i,
               unnest(ARRAY[NULL, 15, 25, 30]::bigint[]) tok
        UNION ALL
        SELECT format('t_%s hwm id %s', t, i), fencing_high_water(t::regclass, jsonb_build_object('id', i))::text
          FROM unnest(ARRAY['t_a', 't_b', 't_c']) t, generate_series(1, 4) i
        UNION ALL
        SELECT 'many: below', try_insert('t_many', i, 99 + i % 50) FROM generate_series(1, 5000) i
        UNION ALL
        SELECT 'many: at hwm', try_insert('t_many', i, 100 + i % 50) FROM generate_series(1, 5000, 7) i
        UNION ALL
        SELECT 'many: no token', try_insert('t_many', i, NULL) FROM generate_series(4990, 5010) i
        UNION ALL
        SELECT 'many: hwm right', (fencing_high_water('t_many', jsonb_build_object('id', i))
                                   = 100 + i % 50)::text
          FROM generate_series(1, 5000, 3) i
        UNION ALL
        SELECT format('coll %s: %s %s', CASE WHEN n % 2 = 1 THEN 'both' ELSE 'a only' END,
                      side, coalesce('token ' || tok, 'no token')),
               try_insert('t_coll', CASE side WHEN 'a' THEN a ELSE b END, tok)
          FROM coll_pairs, unnest(ARRAY['a', 'b']) side, unnest(ARRAY[15, NULL]::bigint[]) tok
        UNION ALL
        SELECT format('coll %s: hwm a, b', CASE WHEN n % 2 = 1 THEN 'both' ELSE 'a only' END),
               format('%s, %s', fencing_high_water('t_coll', jsonb_build_object('id', a)),
                      coalesce(fencing_high_water('t_coll', jsonb_build_object('id', b))::text, 'none'))
          FROM coll_pairs
    ) v GROUP BY what, result
$$;

-- Through the lookup index (which the reads do use: its scans counted, more
-- than 5000 for a run of verdicts()).
SELECT pg_stat_force_next_flush() \gset
SELECT idx_scan AS scans_before FROM pg_stat_all_indexes
 WHERE indexrelid = 'fencing.row_tombstone_lookup'::regclass \gset
CREATE TABLE hash_path AS SELECT * FROM verdicts();
SELECT pg_stat_force_next_flush() \gset
SELECT idx_scan - :scans_before > 5000 AS lookup_index_used FROM pg_stat_all_indexes
 WHERE indexrelid = 'fencing.row_tombstone_lookup'::regclass;
SELECT CASE WHEN what LIKE 'many:%' OR what LIKE 'coll%' THEN what || ' (x' || n || ')' ELSE what END
       AS what, result
  FROM hash_path ORDER BY what COLLATE "C", result COLLATE "C";

-- How many checks answer otherwise than they did through the lookup index.
CREATE FUNCTION differences() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM
        ((TABLE hash_path EXCEPT SELECT * FROM verdicts()) UNION ALL
         (SELECT * FROM verdicts() EXCEPT TABLE hash_path)) d
$$;

-- The same answers through the primary key (the index dropped) ...
DROP INDEX fencing.row_tombstone_lookup;
SELECT differences();
-- ... through SQL, with another index under its name (a B-tree; a hash
-- index on another expression, which the key values alone would never
-- find) ...
CREATE INDEX row_tombstone_lookup ON fencing.row_tombstone (key);
SELECT differences();
DROP INDEX fencing.row_tombstone_lookup;
CREATE INDEX row_tombstone_lookup ON fencing.row_tombstone USING hash ((key));
SELECT differences();
DROP INDEX fencing.row_tombstone_lookup;
-- ... and through SQL with the lookup index and one more index.
CREATE INDEX row_tombstone_lookup ON fencing.row_tombstone USING hash
    ((pg_catalog.array_append(key, relid::pg_catalog.oid::pg_catalog.text)));
CREATE INDEX row_tombstone_hwm ON fencing.row_tombstone (hwm);
SELECT differences();
DROP INDEX fencing.row_tombstone_hwm;
-- The lookup index back alone: used again.
SELECT pg_stat_force_next_flush() \gset
SELECT coalesce(idx_scan, 0) AS scans_before FROM pg_stat_all_indexes
 WHERE indexrelid = 'fencing.row_tombstone_lookup'::regclass \gset
SELECT differences();
SELECT pg_stat_force_next_flush() \gset
SELECT idx_scan - :scans_before > 5000 AS lookup_index_used FROM pg_stat_all_indexes
 WHERE indexrelid = 'fencing.row_tombstone_lookup'::regclass;

-- Tombstones written and raised through the lookup index's path too (both
-- indexes maintained): a raise, a re-insert with a current token, a reset.
INSERT INTO t_a VALUES (4, 1);
BEGIN;
SELECT count(fence_delete('t_a', 4, 40)) AS deleted_t_a_4;
COMMIT;
INSERT INTO t_a VALUES (1, 50);
BEGIN;
SELECT count(fence_delete('t_a', 1, 60)) AS deleted_again;
COMMIT;
SELECT try_insert('t_a', 1, 55) AS below_raised, try_insert('t_a', 1, 60) AS at_raised,
       try_insert('t_a', 4, 39) AS below_new, try_insert('t_a', 2, 15) AS other_key;
SELECT fencing_reset('t_a', '{"id": 1}') AS reset;
SELECT try_insert('t_a', 1, NULL) AS after_reset, try_insert('t_b', 1, NULL) AS other_table;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS found_through_index FROM fencing.row_tombstone
 WHERE array_append(key, relid::oid::text) = ARRAY[encode(int4send(4), 'hex'), 't_a'::regclass::oid::text];
RESET enable_seqscan;
RESET enable_bitmapscan;

-- A database at 1.2 (the 1.3 library, no lookup index): the primary key
-- path; then updated to 1.3, the index is built over the tombstones there.
\c :regress_db
SET client_min_messages = warning;
DROP DATABASE fencing_tomb_lookup;
DROP DATABASE IF EXISTS fencing_tomb_lookup12;
CREATE DATABASE fencing_tomb_lookup12;
\c fencing_tomb_lookup12
\set VERBOSITY terse
\set SHOW_CONTEXT never
SET client_min_messages = warning;
SET stats_fetch_consistency = none;
CREATE EXTENSION fencing VERSION '1.2';
SELECT count(*) AS lookup_indexes FROM pg_class WHERE relname = 'row_tombstone_lookup';
CREATE TABLE t12 (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('t12', require_token => false);  -- a token-less insert below
INSERT INTO t12 SELECT i, 1 FROM generate_series(1, 100) i;
BEGIN; SET LOCAL fencing.token = 10; DELETE FROM t12 WHERE id <= 50; COMMIT;
INSERT INTO t12 VALUES (1, 9);
INSERT INTO t12 (id) VALUES (2);
INSERT INTO t12 VALUES (3, 10);
ALTER EXTENSION fencing UPDATE TO '1.3';
SELECT count(*) AS lookup_indexes FROM pg_class WHERE relname = 'row_tombstone_lookup';
SELECT pg_stat_force_next_flush() \gset
SELECT idx_scan AS scans_before FROM pg_stat_all_indexes
 WHERE indexrelid = 'fencing.row_tombstone_lookup'::regclass \gset
INSERT INTO t12 VALUES (4, 9);
INSERT INTO t12 (id) VALUES (5);
INSERT INTO t12 VALUES (6, 10);
SELECT fencing_high_water('t12', '{"id": 7}') AS hwm_7, fencing_high_water('t12', '{"id": 70}') AS hwm_70;
SELECT pg_stat_force_next_flush() \gset
SELECT idx_scan - :scans_before >= 4 AS lookup_index_used FROM pg_stat_all_indexes
 WHERE indexrelid = 'fencing.row_tombstone_lookup'::regclass;
SELECT id, fence FROM t12 WHERE id <= 6 ORDER BY id;

\c :regress_db
SET client_min_messages = warning;
DROP DATABASE fencing_tomb_lookup12;
