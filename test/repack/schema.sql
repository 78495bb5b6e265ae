-- The tables of the online-rewrite tests (test/repack/run.sh, and
-- test/pg19/repack.sh for PostgreSQL 19's REPACK): one protected table per
-- scope, and the commit-order record of test/repack/stress.py.
CREATE TABLE tt (id int PRIMARY KEY, v int, tok fencing_token);
SELECT fencing_protect('tt', scope => 'table', require_token => false);
CREATE TABLE rs (id int PRIMARY KEY, shard text NOT NULL, v int, tok fencing_token);
SELECT fencing_protect('rs', scope => 'resource', resource_column => 'shard',
                       require_token => false);
CREATE TABLE rw (id int PRIMARY KEY, v int, tok fencing_token);
SELECT fencing_protect('rw', require_token => false);
BEGIN;
SET LOCAL fencing.token = 100;
INSERT INTO tt SELECT g, 0 FROM generate_series(1, 50) g;
INSERT INTO rs SELECT g, CASE WHEN g % 2 = 1 THEN 'a' ELSE 'b' END, 0 FROM generate_series(1, 50) g;
INSERT INTO rw SELECT g, 0 FROM generate_series(1, 50) g;
COMMIT;
-- Other resources and tables, so that the HWM tables have more than one row.
SELECT fencing_resource_advance('other-' || g, 7) FROM generate_series(1, 30) g;
-- Commit order of the stress (test/repack/stress.py).
CREATE TABLE ctr (k text PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
INSERT INTO ctr (k) VALUES ('res:a'), ('res:b'), ('tab'), ('row:41'), ('row:42'), ('lease');
CREATE TABLE history (k text, n bigint, token bigint, PRIMARY KEY (k, n));
