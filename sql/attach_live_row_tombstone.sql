-- ATTACH PARTITION carries a fenced table's tombstones under the root. A
-- tombstone for a key that already has a live row there (in another
-- partition) with a lower token would leave that row judging the key's
-- writers below the key's reported high-water mark (found by an attack pass:
-- an UPDATE at 50 accepted below a reported 100). The ATTACH is refused
-- (55000) until the row is raised; after the raise it attaches, and a stale
-- UPDATE is refused.
\set VERBOSITY terse
CREATE TABLE alr (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE alr_1 PARTITION OF alr FOR VALUES FROM (0) TO (1000);
CREATE TABLE alr_x (id int PRIMARY KEY, v text, fence fencing_token);
INSERT INTO alr_x VALUES (5, 'x', 100), (1500, 'x', 10);
BEGIN;
SET LOCAL fencing.token = 100;
DELETE FROM alr_x WHERE id = 5;
COMMIT;
INSERT INTO alr VALUES (5, 'live', 34);
ALTER TABLE alr ATTACH PARTITION alr_x FOR VALUES FROM (1000) TO (2000);
-- Raise the row to the tombstone, then the ATTACH goes through.
UPDATE alr SET fence = 100 WHERE id = 5;
ALTER TABLE alr ATTACH PARTITION alr_x FOR VALUES FROM (1000) TO (2000);
SELECT fencing_high_water('alr', jsonb_build_object('id', 5)) AS reported_hwm;
DO $$
BEGIN
  SET LOCAL fencing.token = 50;
  UPDATE alr SET v = 'stale-50' WHERE id = 5;
  RAISE NOTICE 'stale UPDATE at 50: accepted';
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'stale UPDATE at 50: refused (%)', SQLSTATE;
END $$;
SELECT id, v, fence FROM alr WHERE id = 5;
DROP TABLE alr;
