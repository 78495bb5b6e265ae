-- fencing demo: the story from the seed articles, told on a scratch cluster.
--
-- Stock of SKU-001 is 10. Clients A and B each process one order (stock - 1)
-- under a lease-based lock. Expected final stock: 8.
\pset footer off
\set VERBOSITY default
CREATE EXTENSION fencing;

\echo
\echo '=== 1. Without fencing: a paused lock holder overwrites the new holder ==='
CREATE TABLE inventory_unfenced (item text PRIMARY KEY, stock int NOT NULL);
INSERT INTO inventory_unfenced VALUES ('SKU-001', 10);
\echo 'A takes the lock and reads stock = 10, then stalls in a GC pause; its lease expires.'
SELECT stock AS a_read FROM inventory_unfenced WHERE item = 'SKU-001' \gset
\echo 'B takes the lock, reads 10, writes 9.'
UPDATE inventory_unfenced SET stock = 10 - 1 WHERE item = 'SKU-001';
\echo 'A wakes up, still believes it holds the lock, and writes its stale 10 - 1 = 9.'
UPDATE inventory_unfenced SET stock = :a_read - 1 WHERE item = 'SKU-001';
SELECT stock AS final_stock_without_fencing FROM inventory_unfenced;   -- 9: one order lost

\echo
\echo '=== 2. With fencing: every lock grant carries a strictly increasing token ==='
-- Any linearizable counter can issue tokens (ZooKeeper zxid, etcd revision,
-- or, as here, a sequence in the same database).
CREATE SEQUENCE lock_tokens START 33;
-- Declaring a fencing_token column is all it takes to fence the table.
CREATE TABLE inventory (item text PRIMARY KEY, stock int NOT NULL, fence fencing_token);
INSERT INTO inventory VALUES ('SKU-001', 10, 0);
SELECT table_name, token_column, scope FROM fencing_protected;

\echo 'A takes the lock: token 33. It reads stock = 10, then stalls.'
SELECT nextval('lock_tokens') AS a_token \gset
SELECT stock AS a_read FROM inventory WHERE item = 'SKU-001' \gset
\echo 'B takes the lock: token 34. It reads 10 and writes 9 with its token.'
SELECT nextval('lock_tokens') AS b_token \gset
BEGIN;
SET LOCAL fencing.token = :b_token;           -- unchanged SQL, fenced
UPDATE inventory SET stock = 10 - 1 WHERE item = 'SKU-001';
COMMIT;
SELECT * FROM inventory;

\echo 'A wakes up and writes with token 33. The database refuses it:'
\set ON_ERROR_STOP 0
BEGIN;
SET LOCAL fencing.token = :a_token;
UPDATE inventory SET stock = :a_read - 1 WHERE item = 'SKU-001';
ROLLBACK;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
\set ON_ERROR_STOP 1
\echo 'The same stale write through fenced_update() reports 0 rows instead of an error:'
SELECT fenced_update('inventory', :a_token, '{"item": "SKU-001"}',
                     json_build_object('stock', :a_read - 1)::jsonb) AS rows_written_by_stale_a;

\echo 'A does what the HINT says: re-acquire (token 35), re-read, then write.'
SELECT nextval('lock_tokens') AS a_token \gset
SELECT stock AS a_read FROM inventory WHERE item = 'SKU-001' \gset
SELECT fenced_update('inventory', :a_token, '{"item": "SKU-001"}',
                     json_build_object('stock', :a_read - 1)::jsonb) AS rows_written;
SELECT item, stock AS final_stock_with_fencing, fence,
       fencing_high_water('inventory', '{"item": "SKU-001"}') AS high_water_mark
  FROM inventory;                                                          -- 8

\echo
\echo '=== 3. Tokens are opaque, ordered values; ZooKeeper zxids read as hex ==='
SELECT '34'::fencing_token < '0x100000022'::fencing_token AS zxid_is_newer,
       fencing_token_epoch('0x100000022') AS epoch, fencing_token_counter('0x100000022') AS counter;
