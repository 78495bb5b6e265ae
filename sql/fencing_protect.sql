-- Protected tables: every write path, every policy and scope, every error.
\set VERBOSITY default
SET client_min_messages = notice;

-- A bad fencing.token set for the session before the library is loaded (a
-- placeholder) fences nothing, as any session value: a write that carries
-- nothing else is refused (TF002); one that carries its own token is judged
-- by it alone (1.6). (Set by the transaction, it fails every write that
-- consults it: session_token.)
SET fencing.token = 'not-a-token';
-- Declaring a fencing_token column is enough.
CREATE TABLE inventory (item text PRIMARY KEY, stock int NOT NULL, fence fencing_token);
SELECT * FROM fencing_protected;
INSERT INTO inventory VALUES ('SKU-001', 10);
\echo :LAST_ERROR_SQLSTATE
BEGIN;
INSERT INTO inventory VALUES ('SKU-001', 10, 33);
SELECT item, fence FROM inventory;
ROLLBACK;
RESET fencing.token;
-- A declared table requires a token (above: require_token is on). This file
-- also writes without one, so the table is opened to unfenced writes.
SELECT fencing_protect('inventory', require_token => false);
INSERT INTO inventory VALUES ('SKU-001', 10, 33);

-- UPDATE: higher and equal tokens pass, a lower one is rejected with TF001.
UPDATE inventory SET stock = 9, fence = 34 WHERE item = 'SKU-001';
UPDATE inventory SET stock = 9, fence = 34 WHERE item = 'SKU-001';
UPDATE inventory SET stock = 9, fence = 33 WHERE item = 'SKU-001';
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory;
-- Writes that carry no token are not fenced (require_token is off) ...
UPDATE inventory SET stock = 8;
-- ... but cannot clear the token.
UPDATE inventory SET fence = NULL;
\echo :LAST_ERROR_SQLSTATE

-- Transparent mode: SET LOCAL fencing.token fences unchanged SQL.
BEGIN;
SET LOCAL fencing.token = 33;
UPDATE inventory SET stock = 1;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT set_config('fencing.token', '35', true);
UPDATE inventory SET stock = 7;
SELECT * FROM inventory;
COMMIT;
SHOW fencing.token;
-- Token column and fencing.token must agree.
BEGIN;
SET LOCAL fencing.token = 36;
UPDATE inventory SET fence = 37;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- Bad fencing.token values.
SET fencing.token = 'abc';
\echo :LAST_ERROR_SQLSTATE
SET fencing.token = '-1';
\echo :LAST_ERROR_SQLSTATE
SET fencing.token = '9223372036854775808';
\echo :LAST_ERROR_SQLSTATE
SET fencing.token = '0x24';
SHOW fencing.token;
RESET fencing.token;
-- Negative bigint tokens never reach a table.
UPDATE inventory SET fence = -1;
\echo :LAST_ERROR_SQLSTATE

-- DELETE is fenced by fencing.token and leaves a tombstone.
BEGIN;
SET LOCAL fencing.token = 34;
DELETE FROM inventory WHERE item = 'SKU-001';
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 36;
DELETE FROM inventory WHERE item = 'SKU-001';
COMMIT;
SELECT fencing_high_water('inventory', '{"item": "SKU-001"}');
-- A stale writer cannot re-INSERT the key; a newer holder can.
INSERT INTO inventory VALUES ('SKU-001', 10, 35);
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 35;
INSERT INTO inventory (item, stock) VALUES ('SKU-001', 10);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- Bringing a deleted key back without any token is refused (TF002): the row
-- would carry no HWM.
INSERT INTO inventory (item, stock) VALUES ('SKU-001', 10);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO inventory VALUES ('SKU-001', 10, 36);
-- Once the key is live again, token-less upserts and duplicate inserts behave
-- as usual: only a row really written onto a tombstoned key needs a token.
INSERT INTO inventory (item, stock) VALUES ('SKU-001', 1) ON CONFLICT DO NOTHING;
INSERT INTO inventory (item, stock) VALUES ('SKU-001', 10)
    ON CONFLICT (item) DO UPDATE SET stock = excluded.stock;
INSERT INTO inventory (item, stock) VALUES ('SKU-001', 1);
\echo :LAST_ERROR_SQLSTATE
-- An UPDATE that moves a row onto a deleted key is checked against its tombstone,
-- and leaves a tombstone on the key it moves away from.
INSERT INTO inventory VALUES ('SKU-TMP', 1, 35);
UPDATE inventory SET item = 'SKU-GONE', fence = 35 WHERE item = 'SKU-TMP';
BEGIN;
SET LOCAL fencing.token = 37;
DELETE FROM inventory WHERE item = 'SKU-GONE';
COMMIT;
INSERT INTO inventory VALUES ('SKU-TMP2', 1, 36);
UPDATE inventory SET item = 'SKU-GONE', fence = 36 WHERE item = 'SKU-TMP2';
\echo :LAST_ERROR_SQLSTATE
UPDATE inventory SET item = 'SKU-GONE', fence = 37 WHERE item = 'SKU-TMP2';
SELECT fencing_high_water('inventory', '{"item": "SKU-TMP2"}') AS left_behind;
BEGIN;
SET LOCAL fencing.token = 40;
DELETE FROM inventory WHERE item = 'SKU-GONE';
COMMIT;
BEGIN;
SET LOCAL fencing.token = 37;
INSERT INTO inventory (item, stock) VALUES ('SKU-002', 5);
COMMIT;
SELECT * FROM inventory ORDER BY item;

-- INSERT ... ON CONFLICT DO UPDATE is fenced on its UPDATE path.
INSERT INTO inventory VALUES ('SKU-002', 4, 36)
    ON CONFLICT (item) DO UPDATE SET stock = excluded.stock, fence = excluded.fence;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO inventory VALUES ('SKU-002', 4, 38)
    ON CONFLICT (item) DO UPDATE SET stock = excluded.stock, fence = excluded.fence;
SELECT * FROM inventory ORDER BY item;

-- MERGE (PostgreSQL 15) is fenced on each action.
MERGE INTO inventory i USING (VALUES ('SKU-002', 3, 37::fencing_token)) v(item, stock, fence)
    ON i.item = v.item
    WHEN MATCHED THEN UPDATE SET stock = v.stock, fence = v.fence
    WHEN NOT MATCHED THEN INSERT VALUES (v.item, v.stock, v.fence);
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 39;
MERGE INTO inventory i USING (VALUES ('SKU-002', 3), ('SKU-003', 1)) v(item, stock)
    ON i.item = v.item
    WHEN MATCHED THEN UPDATE SET stock = v.stock
    WHEN NOT MATCHED THEN INSERT (item, stock) VALUES (v.item, v.stock);
COMMIT;
BEGIN;
SET LOCAL fencing.token = 38;
MERGE INTO inventory i USING (VALUES ('SKU-003')) v(item) ON i.item = v.item
    WHEN MATCHED THEN DELETE;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory ORDER BY item;

-- COPY FROM is fenced like INSERT.
BEGIN;
SET LOCAL fencing.token = 40;
DELETE FROM inventory WHERE item = 'SKU-003';
COMMIT;
COPY inventory FROM STDIN;
SKU-003	1	39
\.
\echo :LAST_ERROR_SQLSTATE
COPY inventory FROM STDIN;
SKU-003	1	40
SKU-004	1	1
\.
BEGIN;
SET LOCAL fencing.token = 41;
COPY inventory (item, stock) FROM STDIN;
SKU-005	2
\.
COMMIT;
SELECT * FROM inventory ORDER BY item;

-- on_stale => 'skip': stale rows are left unwritten, the statement reports 0.
SELECT fencing_protect('inventory', on_stale => 'skip', require_token => false);
UPDATE inventory SET stock = 0, fence = 1 WHERE item = 'SKU-001';
UPDATE inventory SET stock = 0, fence = 41;
SELECT * FROM inventory ORDER BY item;

-- strict: each token writes once.
SELECT fencing_protect('inventory', strict => true, require_token => false);
UPDATE inventory SET stock = 1, fence = 41 WHERE item = 'SKU-001';
\echo :LAST_ERROR_SQLSTATE
UPDATE inventory SET stock = 1, fence = 42 WHERE item = 'SKU-001';
-- ... to one transaction, which may go on writing with it.
BEGIN;
UPDATE inventory SET stock = 2, fence = 43 WHERE item = 'SKU-002';
UPDATE inventory SET stock = 3, fence = 43 WHERE item = 'SKU-002';
COMMIT;
UPDATE inventory SET stock = 4, fence = 43 WHERE item = 'SKU-002';
\echo :LAST_ERROR_SQLSTATE
SELECT stock, fence FROM inventory WHERE item = 'SKU-002';
SELECT * FROM fencing_protected;

-- require_token: a write without a token is rejected with TF002.
SELECT fencing_protect('inventory', require_token => true);
UPDATE inventory SET stock = 2 WHERE item = 'SKU-001';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM inventory WHERE item = 'SKU-001';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO inventory (item, stock) VALUES ('SKU-009', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE inventory SET stock = 2, fence = 42 WHERE item = 'SKU-001';

-- Resource scope: one HWM per resource, shared by tables in the namespace.
CREATE TABLE orders (id int PRIMARY KEY, shard text NOT NULL, amount int, fence bigint);
CREATE TABLE payments (id int PRIMARY KEY, shard text NOT NULL, paid int, fence fencing_token);
SELECT fencing_protect('orders', token_column => 'fence', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'shards');
SELECT fencing_protect('payments', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'shards');
INSERT INTO orders VALUES (1, 'shard-7', 100, 34);
INSERT INTO payments VALUES (1, 'shard-7', 100, 33);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO payments VALUES (1, 'shard-7', 100, 34);
INSERT INTO payments VALUES (2, 'shard-8', 100, 1);
SELECT fencing_resource_high_water('shard-7', 'shards'), fencing_resource_high_water('shard-8', 'shards'),
       fencing_resource_high_water('shard-9', 'shards'), fencing_high_water('orders', '{"shard": "shard-7"}');
-- A resource write with a NULL resource cannot be fenced.
INSERT INTO orders VALUES (3, NULL, 1, 50);
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 33;
DELETE FROM orders WHERE id = 1;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- A row moved to another resource is a write to both resources.
INSERT INTO orders VALUES (5, 'shard-low', 1, 10);
BEGIN;
SET LOCAL fencing.token = 33;
UPDATE orders SET shard = 'shard-low' WHERE id = 1;
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SET LOCAL fencing.token = 35;
UPDATE orders SET shard = 'shard-low' WHERE id = 1;
COMMIT;
SELECT fencing_resource_high_water('shard-7', 'shards') AS old_resource,
       fencing_resource_high_water('shard-low', 'shards') AS new_resource;

-- Resource HWMs are keyed by canonical text: equal numerics share one HWM, and
-- types whose text is not canonical are refused.
CREATE TABLE by_number (id int PRIMARY KEY, res numeric, fence fencing_token);
SELECT fencing_protect('by_number', scope => 'resource', resource_column => 'res',
                       resource_namespace => 'numbers');
INSERT INTO by_number VALUES (1, 1.0, 10);
INSERT INTO by_number VALUES (2, 1.00, 5);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('by_number', '{"res": 1.000}');
CREATE TABLE by_time (id int PRIMARY KEY, at timestamptz, fence fencing_token);
SELECT fencing_protect('by_time', scope => 'resource', resource_column => 'at');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE by_number, by_time;

-- Table scope: one HWM for the whole table.
CREATE TABLE ledger (id int PRIMARY KEY, note text, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
INSERT INTO ledger VALUES (1, 'a', 5), (2, 'b', 6);
INSERT INTO ledger VALUES (3, 'c', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('ledger');
-- Strict: a token is admitted once, to the transaction that raised the HWM to
-- it; that transaction may write many rows with it, no other may.
CREATE TABLE strict_ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('strict_ledger', scope => 'table', strict => true);
INSERT INTO strict_ledger VALUES (1, 7), (2, 7), (3, 7);
BEGIN;
SET LOCAL fencing.token = 8;
INSERT INTO strict_ledger (id) VALUES (4);
UPDATE strict_ledger SET id = id + 10 WHERE id < 3;
COMMIT;
INSERT INTO strict_ledger VALUES (5, 8);
\echo :LAST_ERROR_SQLSTATE
SELECT id, fence FROM strict_ledger ORDER BY id;
DROP TABLE strict_ledger;

-- Partitioned tables and their partitions.
CREATE TABLE events (id int, region text, fence fencing_token, PRIMARY KEY (region, id))
    PARTITION BY LIST (region);
CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu');
CREATE TABLE events_us (LIKE events);
ALTER TABLE events ATTACH PARTITION events_us FOR VALUES IN ('us');
SELECT table_name, scope FROM fencing_protected WHERE table_name::text LIKE 'events%';
SELECT c.relname, count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname LIKE 'zz_fencing_guard_%' AND c.relname LIKE 'events%' GROUP BY 1 ORDER BY 1;
INSERT INTO events VALUES (1, 'eu', 10), (1, 'us', 10);
UPDATE events SET fence = 9 WHERE region = 'eu';
\echo :LAST_ERROR_SQLSTATE
UPDATE events_us SET fence = 9;
\echo :LAST_ERROR_SQLSTATE
UPDATE events SET fence = 11;
SELECT * FROM events ORDER BY region;
-- A partition of a protected table takes its policy from the parent.
SELECT fencing_protect('events_eu');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_unprotect('events_eu');
\echo :LAST_ERROR_SQLSTATE

-- LIKE copies the column, so the copy is fenced too; auto_protect off skips it.
CREATE TABLE inventory_copy (LIKE inventory);
SET fencing.auto_protect = off;
CREATE TABLE unfenced (id int, fence fencing_token);
RESET fencing.auto_protect;
SELECT table_name FROM fencing_protected WHERE table_name::text IN ('inventory_copy', 'unfenced');
-- ALTER TABLE ... ADD COLUMN protects an existing table.
CREATE TABLE later (id int PRIMARY KEY);
ALTER TABLE later ADD COLUMN fence fencing_token;
SELECT table_name, token_column FROM fencing_protected WHERE table_name = 'later'::regclass;
-- Temporary tables are not fenced (one session, no other writer).
CREATE TEMP TABLE scratch (id int PRIMARY KEY, fence fencing_token);
SELECT count(*) FROM fencing_protected WHERE table_name = 'scratch'::regclass;
\set VERBOSITY sqlstate
SELECT fencing_protect('scratch');
\set VERBOSITY default
SELECT :'LAST_ERROR_MESSAGE' LIKE 'cannot fence temporary table %scratch' AS refused;
DROP TABLE scratch;
-- Two token columns: not protected automatically.
CREATE TABLE two_tokens (a fencing_token, b fencing_token);
SELECT count(*) FROM fencing_protected WHERE table_name = 'two_tokens'::regclass;

-- Renames: protection follows the table and the column.
ALTER TABLE later RENAME TO later_renamed;
ALTER TABLE later_renamed RENAME COLUMN fence TO epoch;
SELECT table_name, token_column FROM fencing_protected WHERE table_name = 'later_renamed'::regclass;
INSERT INTO later_renamed VALUES (1, 5);
UPDATE later_renamed SET epoch = 4;
\echo :LAST_ERROR_SQLSTATE
-- Dropping the token column is refused while rows carry tokens
-- (fencing_smaller.sql); once none does, it removes the protection cleanly.
ALTER TABLE later_renamed DROP COLUMN epoch;
\echo :LAST_ERROR_SQLSTATE
BEGIN; SET LOCAL fencing.token = 6; DELETE FROM later_renamed; COMMIT;
ALTER TABLE later_renamed DROP COLUMN epoch;
SELECT count(*) FROM fencing_protected WHERE table_name = 'later_renamed'::regclass;
INSERT INTO later_renamed VALUES (1);

-- Changing the token column's type is refused (1.1; fencing_ddl.sql): the
-- table stays fenced and the INSERT below is an ordinary fenced write.
CREATE TABLE retyped (id int PRIMARY KEY, fence fencing_token);
INSERT INTO retyped VALUES (1, 5);
ALTER TABLE retyped ALTER COLUMN fence TYPE text USING fence::bigint::text;
SELECT count(*) FROM fencing_protected WHERE table_name = 'retyped'::regclass;
BEGIN;
SET LOCAL fencing.token = 34;
INSERT INTO retyped (id) VALUES (2);
COMMIT;
DROP TABLE retyped;

-- A NULL primary key reaches the guard before NOT NULL does: no key, no crash.
CREATE TABLE nullkey (item text PRIMARY KEY, fence fencing_token);
INSERT INTO nullkey VALUES (NULL, 5);
\echo :LAST_ERROR_SQLSTATE
DROP TABLE nullkey;

-- Bulk writes take no per-key locks.
CREATE TABLE bulk (id int PRIMARY KEY, fence fencing_token);
INSERT INTO bulk SELECT g, 1 FROM generate_series(1, 20000) g;
BEGIN;
SET LOCAL fencing.token = 2;
DELETE FROM bulk WHERE id <= 10000;
COMMIT;
SELECT count(*) AS tombstones FROM fencing.row_tombstone WHERE relid = 'bulk'::regclass;
INSERT INTO bulk SELECT g, 1 FROM generate_series(1, 3) g;
\echo :LAST_ERROR_SQLSTATE
DROP TABLE bulk;

-- Unprotect, and dropping a table cleans up after it.
SELECT fencing_unprotect('ledger');
INSERT INTO ledger VALUES (4, 'd', 1);
SELECT fencing_unprotect('ledger');
DROP TABLE orders;
SELECT count(*) FROM fencing.protected WHERE relid::text = 'orders';

-- fencing_protect argument errors.
SELECT fencing_protect('two_tokens');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('two_tokens', token_column => 'c');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('two_tokens', token_column => 'ctid');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE wrong_type (id int, fence text);
SELECT fencing_protect('wrong_type', token_column => 'fence');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('two_tokens', token_column => 'a', scope => 'galaxy');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('two_tokens', token_column => 'a', on_stale => 'ignore');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('two_tokens', token_column => 'a', scope => 'resource');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('two_tokens', token_column => 'a', resource_column => 'b');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect(NULL);
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW a_view AS SELECT 1 AS x;
SELECT fencing_protect('a_view');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_protect('no_such_table');
\echo :LAST_ERROR_SQLSTATE

-- fencing_reset: owner only, logged; the HWM otherwise never goes down.
SELECT fencing_high_water('inventory', '{"item": "SKU-001"}');
SELECT fencing_reset('inventory', '{"item": "SKU-003"}');
SELECT target, key IS NOT NULL AS has_key, old_hwm FROM fencing.reset_log;
SELECT fencing_high_water('inventory', '{"item": "nope"}');
SELECT fencing_high_water('inventory');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('inventory', '{"sku": "x"}');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('unfenced');
\echo :LAST_ERROR_SQLSTATE

DROP TABLE inventory, payments, ledger, events, inventory_copy, unfenced, later_renamed,
    two_tokens, wrong_type;
DROP VIEW a_view;
SELECT count(*) FROM fencing.protected;
