-- The row hint of resource- and table-scope checks (src/pg/hwm/direct_raise.cpp):
-- a backend reads the HWM row at the TID where it last found it, and goes to
-- the primary key index whenever that version is gone, invisible, past the
-- end of the relation, in another relation file, or another key's row. Each
-- way the hint can go stale is made to happen here, in one backend (the hint
-- is per backend), and every write after it must be judged by the right HWM.
--
-- A database of its own, so that the HWM tables hold only this test's rows
-- and their layout (which line pointer a row lands in) is deterministic.
\set VERBOSITY terse
\set SHOW_CONTEXT never
SELECT current_database() AS regress_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS fencing_hwm_hint;
CREATE DATABASE fencing_hwm_hint;
\c fencing_hwm_hint
\set VERBOSITY terse
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE EXTENSION fencing;
ALTER TABLE fencing.resource_hwm SET (autovacuum_enabled = off);
ALTER TABLE fencing.table_hwm SET (autovacuum_enabled = off);
CREATE TABLE h (id serial PRIMARY KEY, res text NOT NULL, fence fencing_token);
SELECT fencing_protect('h', scope => 'resource', resource_column => 'res');
CREATE TABLE ht (id serial PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ht', scope => 'table');
CREATE TABLE ht2 (id serial PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ht2', scope => 'table');

-- One write, its verdict as text (a stale one is caught in a subtransaction).
CREATE FUNCTION w(r text, t bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO h (res, fence) VALUES (r, t);
  RETURN 'admitted';
EXCEPTION WHEN SQLSTATE 'TF001' THEN
  RETURN 'stale';
END $$;
CREATE FUNCTION wt(t bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ht (fence) VALUES (t);
  RETURN 'admitted';
EXCEPTION WHEN SQLSTATE 'TF001' THEN
  RETURN 'stale';
END $$;
CREATE FUNCTION hwm(r text) RETURNS bigint LANGUAGE sql
  AS $$ SELECT hwm FROM fencing.resource_hwm WHERE namespace = 'default' AND resource = r $$;
CREATE FUNCTION slot(r text) RETURNS tid LANGUAGE sql
  AS $$ SELECT ctid FROM fencing.resource_hwm WHERE namespace = 'default' AND resource = r $$;

-- Writes at the HWM (the second one finds the row through the index and
-- keeps its TID, the third reads it there), a stale one, raises (heap-only
-- updates: the hint moves with them).
SELECT w('k1', 10), w('k1', 10), w('k1', 10), w('k1', 9);
SELECT w('k1', 11), w('k1', 11), w('k1', 10), w('k1', 12), w('k1', 11), hwm('k1');
-- The same in one statement, a raise and writes at the raised HWM.
INSERT INTO h (res, fence) VALUES ('k1', 12), ('k1', 13), ('k1', 13);
INSERT INTO h (res, fence) VALUES ('k1', 13), ('k1', 12);

-- Fill the HWM table's pages, so that raises of k1 can no longer stay on
-- their page: non-heap-only updates, new index entries, the row moving from
-- page to page. After each raise a write at the HWM and a stale one.
SELECT count(*) FROM (SELECT w('fill' || g, 1) FROM generate_series(1, 400) g) s;
CREATE FUNCTION raise_k1(first bigint, n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  verdicts text[] := '{}';
  blocks int[] := '{}';
BEGIN
  FOR i IN 0 .. n - 1 LOOP
    verdicts := verdicts || w('k1', first + i) || w('k1', first + i) || w('k1', first + i - 1);
    blocks := blocks || ((slot('k1')::text)::point)[0]::int;
  END LOOP;
  RETURN format('%s; pages %s', (SELECT string_agg(DISTINCT v, ',') FROM unnest(verdicts) v),
                (SELECT count(DISTINCT b) FROM unnest(blocks) b));
END $$;
-- In one transaction, whose dead versions cannot be pruned before it ends,
-- the page runs full and the row moves on.
SELECT raise_k1(14, 150);
SELECT hwm('k1'), ((slot('k1')::text)::point)[0] > 0 AS moved_off_first_page;
-- And in transactions of their own, reading the moved row through the hint.
SELECT w('k1', 163), w('k1', 162), w('k1', 164), w('k1', 163);
SELECT raise_k1(165, 3);
SELECT raise_k1(168, 3);
SELECT w('k1', 170), w('k1', 169), hwm('k1');

-- A rewritten relation (new relfilenode, every TID changed): VACUUM FULL,
-- CLUSTER, and again after each a write at the HWM, a stale one, a raise.
VACUUM FULL fencing.resource_hwm;
SELECT w('k1', 174), w('k1', 173), w('k1', 175), w('k1', 175), w('k1', 174), hwm('k1');
CLUSTER fencing.resource_hwm USING resource_hwm_pkey;
SELECT w('k1', 175), w('k1', 174), w('k1', 176), w('k1', 176), w('k1', 175), hwm('k1');

-- The hinted version dead and pruned: a plain VACUUM after raises, then
-- writes that must still see the newest version.
SELECT w('k1', 177), w('k1', 178), w('k1', 179);
VACUUM fencing.resource_hwm;
SELECT w('k1', 179), w('k1', 178), w('k1', 180), hwm('k1');

-- Reset: the row deleted. The next write is a first write again (a low
-- token is admitted), and then is judged by its own new HWM.
SELECT fencing_resource_reset('k1');
SELECT w('k1', 5), w('k1', 5), w('k1', 4), hwm('k1');

-- The hinted block past the end of the relation: every row reset, VACUUM
-- truncates the relation to nothing, and the next write reads no block
-- beyond its end.
SELECT count(*) FROM (SELECT fencing_resource_reset('fill' || g) FROM generate_series(1, 400) g) s;
SELECT fencing_resource_reset('k1');
VACUUM fencing.resource_hwm;
SELECT pg_relation_size('fencing.resource_hwm') AS size_after_truncation;
SELECT w('k1', 3), w('k1', 3), w('k1', 2), hwm('k1');

-- The hinted line pointer reused by ANOTHER resource's row: k0 keeps the
-- page, k1's row is reset and vacuumed away, k2's first write lands in k1's
-- slot. k1's next write must not be judged by k2's HWM (nor raise it).
SELECT fencing_resource_reset('k1');
VACUUM fencing.resource_hwm;
SELECT w('k0', 1), w('k1', 10), w('k1', 10);
SELECT slot('k1') AS k1_slot \gset
SELECT fencing_resource_reset('k1');
VACUUM fencing.resource_hwm;
SELECT w('k2', 100);
SELECT slot('k2') = :'k1_slot' AS k2_in_k1_slot;
SELECT w('k1', 6), w('k1', 6), w('k1', 5), hwm('k1'), hwm('k2');
SELECT w('k2', 99), w('k2', 100), hwm('k2');

-- TRUNCATE by a superuser: a new relation file, every HWM gone.
TRUNCATE fencing.resource_hwm;
SELECT w('k1', 1), w('k1', 1), w('k2', 1), hwm('k1'), hwm('k2');

-- A raise rolled back with its savepoint: the hinted version is dead (its
-- inserter aborted), the HWM is the one before.
SELECT w('k1', 20);
BEGIN;
SAVEPOINT s;
SELECT w('k1', 25);
ROLLBACK TO SAVEPOINT s;
SELECT w('k1', 20), w('k1', 24), w('k1', 23), hwm('k1');
COMMIT;
SELECT w('k1', 25), hwm('k1');
-- The same with the whole transaction rolled back.
BEGIN;
SELECT w('k1', 30), w('k1', 30);
ROLLBACK;
SELECT w('k1', 24), w('k1', 26), hwm('k1');

-- REPEATABLE READ and SERIALIZABLE: the hinted version read under the
-- transaction's snapshot.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT w('k1', 26), w('k1', 27), w('k1', 27), w('k1', 26), hwm('k1');
COMMIT;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT w('k1', 27), w('k1', 28), w('k1', 28), w('k1', 27), hwm('k1');
COMMIT;

-- Strict mode: an equal token is admitted only to the transaction that
-- raised the HWM to it.
SELECT fencing_protect('h', scope => 'resource', resource_column => 'res', strict => true);
SELECT w('k1', 28), w('k1', 29), w('k1', 29), hwm('k1');
SELECT w('k1', 29), w('k1', 30), hwm('k1');
VACUUM FULL fencing.resource_hwm;
SELECT w('k1', 30), w('k1', 31), w('k1', 31), hwm('k1');
SELECT fencing_protect('h', scope => 'resource', resource_column => 'res', strict => false);

-- Table scope: the same hint on fencing.table_hwm, keyed by the table.
SELECT wt(10), wt(10), wt(10), wt(9), wt(11), wt(11), wt(10);
VACUUM FULL fencing.table_hwm;
SELECT wt(11), wt(10), wt(12);
-- Rewritten again, and read at the HWM (no raise): the hint is ht's new slot.
VACUUM FULL fencing.table_hwm;
SELECT wt(12), wt(12), wt(11);
-- ht's HWM reset and vacuumed away, ht2's first write takes its slot: ht's
-- next write is a first write, ht2's HWM is untouched.
SELECT ctid AS ht_slot FROM fencing.table_hwm WHERE relid = 'ht'::regclass \gset
SELECT fencing_reset('ht');
VACUUM fencing.table_hwm;
INSERT INTO ht2 (fence) VALUES (50);
SELECT ctid = :'ht_slot' AS ht2_in_ht_slot FROM fencing.table_hwm WHERE relid = 'ht2'::regclass;
SELECT wt(7), wt(7), wt(6);
SELECT relid, hwm FROM fencing.table_hwm ORDER BY relid::text;

\c :regress_db
SET client_min_messages = warning;
DROP DATABASE fencing_hwm_hint;
