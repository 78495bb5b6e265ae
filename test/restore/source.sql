-- The source database of the restore suite: a fenced table in each scope with
-- state outside its rows (tombstones, a table HWM, resource HWMs, floors), a
-- non-default row-scope policy, and a partitioned row-scope table.
CREATE EXTENSION IF NOT EXISTS fencing;
-- row scope: key 3 deleted at 30 and retired into the table's floor (30); then
-- key 2 deleted at 40 (a tombstone) and row 1 written at 40.
CREATE TABLE inv (id int PRIMARY KEY, stock int, fence fencing_token);
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO inv VALUES (1, 10), (2, 10), (3, 10); COMMIT;
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM inv WHERE id = 3; COMMIT;
SELECT fencing_enable_retirement('inv'::regclass);
SELECT pg_sleep(0.05);
SELECT fencing_retire('inv'::regclass, '0 s') AS retired_inv;
BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inv WHERE id = 2; UPDATE inv SET stock = 9 WHERE id = 1; COMMIT;
-- table scope at 50.
CREATE TABLE led (id int PRIMARY KEY, amount int, fence fencing_token);
SELECT fencing_protect('led', scope => 'table');
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO led VALUES (1, 1), (2, 2); COMMIT;
SELECT fencing_advance('led', 50);
-- resource scope, namespace shop: resource old retired into the namespace's
-- floor (40); s1 at 50.
CREATE TABLE ord (id int PRIMARY KEY, shard text NOT NULL, v int, fence fencing_token);
SELECT fencing_protect('ord', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'shop');
SELECT fencing_enable_retirement('shop');
SELECT fencing_resource_advance('old', 40, 'shop');
SELECT pg_sleep(0.05);
SELECT fencing_retire('shop', '0 s') AS retired_shop;
BEGIN; SET LOCAL fencing.token = 45; INSERT INTO ord VALUES (1, 's1', 0); COMMIT;
SELECT fencing_resource_advance('s1', 50, 'shop');
-- a non-default row-scope policy.
CREATE TABLE jobs (id int PRIMARY KEY, v int, tok fencing_token);
SELECT fencing_protect('jobs', strict => true, on_stale => 'skip');
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO jobs VALUES (1, 0); COMMIT;
-- partitioned, row scope: key (2, 'us') deleted at 20.
CREATE TABLE ev (id int, region text, v int, fence fencing_token, PRIMARY KEY (id, region))
    PARTITION BY LIST (region);
CREATE TABLE ev_eu PARTITION OF ev FOR VALUES IN ('eu');
CREATE TABLE ev_us PARTITION OF ev FOR VALUES IN ('us');
CREATE TABLE ev_ap PARTITION OF ev FOR VALUES IN ('ap');
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO ev VALUES (1, 'eu', 0), (2, 'us', 0), (3, 'ap', 0); COMMIT;
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM ev WHERE id = 2; COMMIT;
