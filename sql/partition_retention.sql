-- Partition maintenance: DROP TABLE of a partition, DROP SCHEMA ... CASCADE
-- and DROP OWNED that drop one, ALTER TABLE ... DETACH PARTITION (plain and
-- CONCURRENTLY). In row scope a row's HWM is its own token: its key must stay
-- fenced after the row leaves the table, so every removed row leaves a
-- tombstone under the fenced table first. Resource and table scope keep their
-- HWMs under the fenced table, which the DDL leaves alone. Every write
-- carries a token.
\set VERBOSITY default
SET client_min_messages = notice;

-- Runs stmt with fencing.token = token (for this statement's transaction);
-- 'ok', or the SQLSTATE it failed with.
CREATE FUNCTION pr_try(token bigint, stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('fencing.token', token::text, true);
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
-- The same through fenced_upsert(): 'ok' (a row written), 'stale' (0 rows)
-- or the SQLSTATE.
CREATE FUNCTION pr_upsert(target regclass, token bigint, r jsonb) RETURNS text
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN CASE WHEN fenced_upsert(target, token, r) > 0 THEN 'ok' ELSE 'stale' END;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
CREATE FUNCTION pr_tombstones(rel regclass) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM fencing.row_tombstone WHERE relid = rel
$$;

-- Row scope, a three-level tree with a default partition: 1-99 in rw_a,
-- 100-199 in rw_b (sub-partitioned: rw_b1, rw_b2), 200-299 in rw_c, 300-399
-- in rw_e; every row at 40, rows 5, 105, 155, 205, 305 raised to 50.
CREATE TABLE rw (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE rw_a PARTITION OF rw FOR VALUES FROM (1) TO (100);
CREATE TABLE rw_b PARTITION OF rw FOR VALUES FROM (100) TO (200) PARTITION BY RANGE (id);
CREATE TABLE rw_b1 PARTITION OF rw_b FOR VALUES FROM (100) TO (150);
CREATE TABLE rw_b2 PARTITION OF rw_b FOR VALUES FROM (150) TO (200);
CREATE TABLE rw_c PARTITION OF rw FOR VALUES FROM (200) TO (300);
CREATE TABLE rw_e PARTITION OF rw FOR VALUES FROM (300) TO (400);
CREATE TABLE rw_default PARTITION OF rw DEFAULT;
SELECT pr_try(40, $$INSERT INTO rw SELECT g, 'seed', 40 FROM generate_series(1, 399) g$$);
SELECT pr_try(50, $$UPDATE rw SET v = 'raised' WHERE id IN (5, 105, 155, 205, 305)$$);
SELECT pr_tombstones('rw');

-- A DROP rolled back leaves no tombstones behind.
BEGIN;
DROP TABLE rw_a;
SELECT pr_tombstones('rw');
ROLLBACK;
SELECT pr_tombstones('rw');

-- DROP TABLE of a leaf: 99 tombstones. Stale re-inserts (they land in the
-- default partition) and stale upserts are refused; fresh ones accepted.
DROP TABLE rw_a;
SELECT pr_tombstones('rw');
SELECT fencing_high_water('rw', '{"id": 5}') AS hwm_5, fencing_high_water('rw', '{"id": 6}') AS hwm_6;
SELECT pr_try(49, $$INSERT INTO rw VALUES (5, 'stale', 49)$$) AS stale_5,
       pr_try(39, $$INSERT INTO rw VALUES (6, 'stale', 39)$$) AS stale_6,
       pr_upsert('rw', 49, '{"id": 5, "v": "stale"}') AS upsert_5,
       pr_upsert('rw', 39, '{"id": 7, "v": "stale"}') AS upsert_7;
SELECT pr_try(51, $$INSERT INTO rw VALUES (5, 'fresh', 51)$$) AS fresh_5,
       pr_upsert('rw', 41, '{"id": 6, "v": "fresh"}') AS upsert_6;
SELECT tableoid::regclass, id, v, fence FROM rw WHERE id BETWEEN 5 AND 7 ORDER BY id;

-- DROP TABLE of a sub-partitioned partition, and of several at once.
DROP TABLE rw_b;
DROP TABLE rw_c, rw_e;
SELECT pr_tombstones('rw');
SELECT pr_try(49, $$INSERT INTO rw VALUES (105, 'stale', 49)$$) AS stale_105,
       pr_try(49, $$INSERT INTO rw VALUES (155, 'stale', 49)$$) AS stale_155,
       pr_try(39, $$INSERT INTO rw VALUES (199, 'stale', 39)$$) AS stale_199,
       pr_try(49, $$INSERT INTO rw VALUES (205, 'stale', 49)$$) AS stale_205,
       pr_try(39, $$INSERT INTO rw VALUES (399, 'stale', 39)$$) AS stale_399,
       pr_upsert('rw', 49, '{"id": 305, "v": "stale"}') AS upsert_305;
SELECT pr_try(50, $$INSERT INTO rw VALUES (155, 'fresh', 50)$$) AS fresh_155,
       pr_try(41, $$INSERT INTO rw VALUES (399, 'fresh', 41)$$) AS fresh_399;
-- Dropping the whole table drops its state with it.
DROP TABLE rw;
SELECT count(*) FROM fencing.row_tombstone WHERE NOT EXISTS
    (SELECT 1 FROM pg_class c WHERE c.oid = relid);

-- Row scope, DETACH PARTITION: the detached table stays fenced on its own
-- (keeping its rows), the parent keeps a tombstone for every detached key.
CREATE TABLE rd (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE rd_a PARTITION OF rd FOR VALUES FROM (1) TO (100);
CREATE TABLE rd_b PARTITION OF rd FOR VALUES FROM (100) TO (200) PARTITION BY RANGE (id);
CREATE TABLE rd_b1 PARTITION OF rd_b FOR VALUES FROM (100) TO (150);
CREATE TABLE rd_b2 PARTITION OF rd_b FOR VALUES FROM (150) TO (200);
CREATE TABLE rd_c PARTITION OF rd FOR VALUES FROM (200) TO (300);
SELECT pr_try(40, $$INSERT INTO rd SELECT g, 'seed', 40 FROM generate_series(1, 299) g$$);
SELECT pr_try(50, $$UPDATE rd SET v = 'raised' WHERE id IN (5, 105, 155, 205)$$);
BEGIN;
ALTER TABLE rd DETACH PARTITION rd_a;
SELECT pr_tombstones('rd');
ROLLBACK;
SELECT pr_tombstones('rd'), pr_tombstones('rd_a');
ALTER TABLE rd DETACH PARTITION rd_a;
-- A leaf at the second level, detached from its own parent.
ALTER TABLE rd_b DETACH PARTITION rd_b2;
SELECT pr_tombstones('rd') AS rd, pr_tombstones('rd_a') AS rd_a, pr_tombstones('rd_b2') AS rd_b2;
CREATE TABLE rd_default PARTITION OF rd DEFAULT;
CREATE TABLE rd_b_default PARTITION OF rd_b DEFAULT;
SELECT pr_try(49, $$INSERT INTO rd VALUES (5, 'stale', 49)$$) AS stale_5,
       pr_try(39, $$INSERT INTO rd VALUES (99, 'stale', 39)$$) AS stale_99,
       pr_try(49, $$INSERT INTO rd VALUES (155, 'stale', 49)$$) AS stale_155,
       pr_upsert('rd', 39, '{"id": 160, "v": "stale"}') AS upsert_160;
SELECT pr_try(51, $$INSERT INTO rd VALUES (5, 'fresh', 51)$$) AS fresh_5,
       pr_upsert('rd', 41, '{"id": 160, "v": "fresh"}') AS upsert_160;
-- The detached tables keep their rows, fenced by their own tokens.
SELECT pr_try(49, $$UPDATE rd_a SET v = 'stale' WHERE id = 5$$) AS detached_stale,
       pr_try(50, $$UPDATE rd_b2 SET v = 'ok' WHERE id = 155$$) AS detached_ok;
SELECT table_name, scope FROM fencing_protected WHERE table_name::text LIKE 'rd%' ORDER BY 1;
-- DETACH CONCURRENTLY commits in two transactions: refused in row scope
-- (the partition rd_c, with no default partition in the way).
DROP TABLE rd_default, rd_b_default;
ALTER TABLE rd DETACH PARTITION rd_c CONCURRENTLY;
SELECT count(*) FROM rd_c;
DROP TABLE rd, rd_a, rd_b2;

-- DROP SCHEMA ... CASCADE that drops a partition of a table in another schema,
-- and DROP OWNED BY the owner of a partition.
CREATE TABLE rs (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE SCHEMA pr_elsewhere;
CREATE TABLE pr_elsewhere.rs_a PARTITION OF rs FOR VALUES FROM (1) TO (100);
CREATE TABLE rs_b PARTITION OF rs FOR VALUES FROM (100) TO (200);
CREATE TABLE rs_default PARTITION OF rs DEFAULT;
CREATE ROLE regress_pr_owner;
ALTER TABLE rs_b OWNER TO regress_pr_owner;
SELECT pr_try(40, $$INSERT INTO rs SELECT g, 'seed', 40 FROM generate_series(1, 199) g$$);
SELECT pr_try(50, $$UPDATE rs SET v = 'raised' WHERE id IN (5, 105)$$);
DROP SCHEMA pr_elsewhere CASCADE;
DROP OWNED BY regress_pr_owner;
DROP ROLE regress_pr_owner;
SELECT pr_tombstones('rs');
SELECT pr_try(49, $$INSERT INTO rs VALUES (5, 'stale', 49)$$) AS stale_5,
       pr_try(49, $$INSERT INTO rs VALUES (105, 'stale', 49)$$) AS stale_105,
       pr_upsert('rs', 39, '{"id": 106, "v": "stale"}') AS upsert_106,
       pr_try(51, $$INSERT INTO rs VALUES (105, 'fresh', 51)$$) AS fresh_105;

-- Other commands that drop a partition by cascade cannot tombstone its rows
-- first: refused (fail closed).
CREATE ACCESS METHOD pr_heap TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE rs_c PARTITION OF rs FOR VALUES FROM (200) TO (300) USING pr_heap;
SELECT pr_try(40, $$INSERT INTO rs VALUES (201, 'seed', 40)$$);
DROP ACCESS METHOD pr_heap CASCADE;
SELECT count(*) FROM rs_c;
DROP TABLE rs_c;
DROP ACCESS METHOD pr_heap;
-- ... but a fenced table of its own goes, with its state.
CREATE ACCESS METHOD pr_heap TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE ro (id int PRIMARY KEY, v text, fence fencing_token) USING pr_heap;
SELECT pr_try(40, $$INSERT INTO ro VALUES (1, 'seed', 40)$$);
DROP ACCESS METHOD pr_heap CASCADE;
SELECT to_regclass('ro') AS ro;
DROP TABLE rs;

-- Table and resource scope: the HWMs are kept under the fenced table, and DROP,
-- DETACH and DETACH CONCURRENTLY leave them as they are.
CREATE TABLE tt (id int PRIMARY KEY, v text, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE tt_a PARTITION OF tt FOR VALUES FROM (1) TO (100);
CREATE TABLE tt_b PARTITION OF tt FOR VALUES FROM (100) TO (200);
CREATE TABLE tt_c PARTITION OF tt FOR VALUES FROM (200) TO (300);
CREATE TABLE tt_d PARTITION OF tt FOR VALUES FROM (300) TO (400);
SELECT fencing_protect('tt', scope => 'table');
CREATE TABLE rr (id int, account text, v text, fence fencing_token, PRIMARY KEY (id, account))
    PARTITION BY RANGE (id);
CREATE TABLE rr_a PARTITION OF rr FOR VALUES FROM (1) TO (100);
CREATE TABLE rr_b PARTITION OF rr FOR VALUES FROM (100) TO (200);
CREATE TABLE rr_c PARTITION OF rr FOR VALUES FROM (200) TO (300);
CREATE TABLE rr_d PARTITION OF rr FOR VALUES FROM (300) TO (400);
SELECT fencing_protect('rr', scope => 'resource', resource_column => 'account');
SELECT pr_try(40, $$INSERT INTO tt SELECT g, 'seed', 40 FROM generate_series(1, 399) g$$);
SELECT pr_try(60, $$UPDATE tt SET v = 'raised' WHERE id = 5$$);
SELECT pr_try(40, $$INSERT INTO rr SELECT g, 'acct' || (g % 100), 'seed', 40 FROM generate_series(1, 399) g$$);
SELECT pr_try(60, $$UPDATE rr SET v = 'raised' WHERE id = 5$$);
DROP TABLE tt_a;
DROP TABLE rr_a;
ALTER TABLE tt DETACH PARTITION tt_b;
ALTER TABLE rr DETACH PARTITION rr_b;
ALTER TABLE tt DETACH PARTITION tt_c CONCURRENTLY;
ALTER TABLE rr DETACH PARTITION rr_c CONCURRENTLY;
SELECT fencing_high_water('tt') AS tt_hwm,
       fencing_high_water('rr', '{"account": "acct5"}') AS rr_hwm;
CREATE TABLE tt_default PARTITION OF tt DEFAULT;
CREATE TABLE rr_default PARTITION OF rr DEFAULT;
SELECT pr_try(59, $$INSERT INTO tt VALUES (5, 'stale', 59)$$) AS tt_stale,
       pr_try(59, $$INSERT INTO rr VALUES (5, 'acct5', 'stale', 59)$$) AS rr_stale,
       pr_try(60, $$INSERT INTO tt VALUES (5, 'fresh', 60)$$) AS tt_fresh,
       pr_try(61, $$INSERT INTO rr VALUES (5, 'acct5', 'fresh', 61)$$) AS rr_fresh;
SELECT count(*) FROM fencing.row_tombstone
 WHERE relid IN ('tt'::regclass, 'rr'::regclass);
-- Their partitions have a truncate trigger too (no tombstones to write): a
-- drop by cascade is not refused as a row-scope partition's is.
CREATE ACCESS METHOD pr_heap TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE tt_e PARTITION OF tt FOR VALUES FROM (400) TO (500) USING pr_heap;
CREATE TABLE rr_e PARTITION OF rr FOR VALUES FROM (400) TO (500) USING pr_heap;
SELECT tgname ~ '^zz_fencing_truncate_check_[0-9]+$' AS truncate_check
  FROM pg_trigger WHERE tgrelid IN ('tt_e'::regclass, 'rr_e'::regclass)
   AND tgfoid = 'fencing.truncate_guard'::regproc;
DROP ACCESS METHOD pr_heap CASCADE;
SELECT to_regclass('tt_e') AS tt_e, to_regclass('rr_e') AS rr_e,
       fencing_high_water('tt') AS tt_hwm;
DROP TABLE tt, tt_b, tt_c, rr, rr_b, rr_c;

-- A partitioned partition protected on its own (its own home, with its own
-- tombstones) under an unprotected parent: the parent cannot become the
-- fenced table while it is, neither by fencing_protect() nor by an added
-- fencing_token column, since the guards would then judge keys by the
-- parent's tombstones alone and a deleted key of the partition would come
-- back with a stale token. Detach, protect, attach: ATTACH carries the state.
CREATE TABLE up (id int PRIMARY KEY, v text, tok bigint) PARTITION BY RANGE (id);
CREATE TABLE up_m PARTITION OF up FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id);
CREATE TABLE up_l PARTITION OF up_m FOR VALUES FROM (0) TO (50);
SELECT fencing_protect('up_m', token_column => 'tok', require_token => true);
SELECT pr_try(10, $$INSERT INTO up VALUES (1, 'a'), (2, 'b')$$) AS seeded,
       pr_try(10, $$DELETE FROM up WHERE id = 2$$) AS deleted;
\set VERBOSITY terse
SELECT fencing_protect('up', token_column => 'tok');
ALTER TABLE up ADD COLUMN up_fence fencing_token;
\set VERBOSITY default
SELECT table_name, token_column, scope FROM fencing_protected
 WHERE table_name::text LIKE 'up%' ORDER BY 1;
SELECT pr_try(5, $$INSERT INTO up (id, v) VALUES (2, 'stale')$$) AS stale_reinsert;
ALTER TABLE up DROP COLUMN up_fence;
ALTER TABLE up DETACH PARTITION up_m;
SELECT fencing_protect('up', token_column => 'tok');
ALTER TABLE up ATTACH PARTITION up_m FOR VALUES FROM (0) TO (100);
SELECT pr_try(5, $$INSERT INTO up (id, v) VALUES (2, 'stale')$$) AS stale_after_attach,
       pr_try(11, $$INSERT INTO up (id, v) VALUES (2, 'fresh')$$) AS fresh_after_attach;
DROP TABLE up;
DROP FUNCTION pr_try(bigint, text), pr_upsert(regclass, bigint, jsonb), pr_tombstones(regclass);
