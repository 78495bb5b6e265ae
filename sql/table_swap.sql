-- Table swaps (pg-osc, pgroll, gh-ost's model), recreates and drops keep the
-- fence: fencing_transfer_state(), and the state a dropped fenced table keeps
-- under its name.
\set VERBOSITY default
SET client_min_messages = notice;

-- Row scope: tombstones move with the swap; a stale re-insert of a deleted
-- key is refused by the new table.
CREATE TABLE acct (id int PRIMARY KEY, bal int, fence fencing_token);
INSERT INTO acct VALUES (1, 10, 5), (2, 20, 5);
BEGIN; SET LOCAL fencing.token = 9; DELETE FROM acct WHERE id = 2; COMMIT;
CREATE TABLE acct_new (LIKE acct INCLUDING ALL);
ALTER TABLE acct_new ADD COLUMN note text;
-- the copy carries the rows' tokens, in any order; row scope refuses none
INSERT INTO acct_new (id, bal, fence) SELECT id, bal, fence FROM acct ORDER BY id DESC;
BEGIN;
LOCK TABLE acct, acct_new IN ACCESS EXCLUSIVE MODE;
SELECT fencing_transfer_state('acct', 'acct_new');
ALTER TABLE acct RENAME TO acct_old;
ALTER TABLE acct_new RENAME TO acct;
COMMIT;
SELECT table_name, scope, guard_ok FROM fencing_protected ORDER BY 1::text;
SELECT fencing_high_water('acct', '{"id": 2}') AS key2_after_swap;
BEGIN; SET LOCAL fencing.token = 5; INSERT INTO acct (id, bal) VALUES (2, 666); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 4; UPDATE acct SET bal = 0 WHERE id = 1; ROLLBACK;
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO acct (id, bal) VALUES (2, 7); COMMIT;
-- the swapped-out table refuses every write, in replica mode too
INSERT INTO acct_old VALUES (3, 1, 100);
SET session_replication_role = replica;
DELETE FROM acct_old;
RESET session_replication_role;
TRUNCATE acct_old;
-- it is not fenced again by DDL, and its DROP keeps nothing
ALTER TABLE acct_old ADD COLUMN x int;
SELECT count(*) AS acct_old_fenced FROM fencing_protected WHERE table_name = 'acct_old'::regclass;
DROP TABLE acct_old;
SELECT count(*) AS kept FROM fencing_dropped_state;

-- Table scope: the copy goes into the shadow in row scope (never refused, in
-- key order); the table HWM comes with the swap.
CREATE TABLE ledger (id int PRIMARY KEY, amount int, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
BEGIN; SET LOCAL fencing.token = 5; INSERT INTO ledger VALUES (1, 10), (2, 20); COMMIT;
BEGIN; SET LOCAL fencing.token = 8; UPDATE ledger SET amount = 11 WHERE id = 1; COMMIT;
SELECT fencing_advance('ledger', 50);
CREATE TABLE ledger_new (LIKE ledger INCLUDING ALL);
INSERT INTO ledger_new SELECT * FROM ledger ORDER BY id;
BEGIN;
SELECT fencing_transfer_state('ledger', 'ledger_new');
ALTER TABLE ledger RENAME TO ledger_old;
ALTER TABLE ledger_new RENAME TO ledger;
COMMIT;
-- an advance of the swapped-out table is refused, not lost
SELECT fencing_advance('ledger_old', 60);
DROP TABLE ledger_old;
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'ledger'::regclass;
SELECT fencing_high_water('ledger') AS ledger_hwm_after_swap;
BEGIN; SET LOCAL fencing.token = 20; UPDATE ledger SET amount = 666 WHERE id = 2; ROLLBACK;
BEGIN; SET LOCAL fencing.token = 51; UPDATE ledger SET amount = 12 WHERE id = 2; COMMIT;

-- Resource scope: the policy (namespace) comes with the swap; the copy was
-- refused before (TF001) when the shadow was protected in resource scope.
CREATE TABLE orders (id int PRIMARY KEY, shard text NOT NULL, v int, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'swap_shop');
BEGIN; SET LOCAL fencing.token = 5; INSERT INTO orders VALUES (1, 's1', 0), (2, 's1', 0); COMMIT;
BEGIN; SET LOCAL fencing.token = 7; UPDATE orders SET v = 1 WHERE id = 2; COMMIT;
CREATE TABLE orders_new (LIKE orders INCLUDING ALL);
INSERT INTO orders_new SELECT * FROM orders ORDER BY id;
BEGIN;
SELECT fencing_transfer_state('orders', 'orders_new');
ALTER TABLE orders RENAME TO orders_old;
ALTER TABLE orders_new RENAME TO orders;
COMMIT;
DROP TABLE orders_old;
SELECT table_name, scope, resource_column, resource_namespace, guard_ok
  FROM fencing_protected WHERE table_name = 'orders'::regclass;
BEGIN; SET LOCAL fencing.token = 6; UPDATE orders SET v = 666 WHERE id = 1; ROLLBACK;
BEGIN; SET LOCAL fencing.token = 7; UPDATE orders SET v = 2 WHERE id = 1; COMMIT;

-- Partitioned tables: transfer between the partitioned parents; the old
-- tree's partitions refuse writes too (a statement trigger of the parent does
-- not fire for a write that names a partition).
CREATE TABLE ev (id int, region text, v int, fence fencing_token,
                 PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE ev_eu PARTITION OF ev FOR VALUES IN ('eu');
CREATE TABLE ev_us PARTITION OF ev FOR VALUES IN ('us');
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO ev VALUES (1, 'eu', 0), (2, 'us', 0); COMMIT;
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM ev WHERE id = 2; COMMIT;
CREATE TABLE ev_new (LIKE ev INCLUDING ALL) PARTITION BY LIST (region);
CREATE TABLE ev_new_eu PARTITION OF ev_new FOR VALUES IN ('eu');
CREATE TABLE ev_new_us PARTITION OF ev_new FOR VALUES IN ('us');
INSERT INTO ev_new SELECT * FROM ev;
BEGIN;
SELECT fencing_transfer_state('ev', 'ev_new');
ALTER TABLE ev RENAME TO ev_old;
ALTER TABLE ev_new RENAME TO ev;
COMMIT;
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'ev'::regclass;
BEGIN; SET LOCAL fencing.token = 15; INSERT INTO ev VALUES (2, 'us', 1); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 5; UPDATE ev_new_eu SET v = 1; ROLLBACK;
INSERT INTO ev_eu VALUES (5, 'eu', 1, 100);
UPDATE ev_us SET v = 1;
SELECT count(*) AS swapped_out_triggers FROM pg_trigger WHERE tgname = 'zz_fencing_swapped_out';
-- a partition cannot take a tree's state
SELECT fencing_transfer_state('ev', 'ev_new_eu');
DROP TABLE ev_old;

-- A target that cannot carry the state is refused, and nothing moves.
CREATE TABLE t_src (id int PRIMARY KEY, fence fencing_token);
BEGIN; SET LOCAL fencing.token = 3; INSERT INTO t_src VALUES (1); DELETE FROM t_src; COMMIT;
CREATE TABLE t_bigkey (id bigint PRIMARY KEY, fence fencing_token);
SELECT fencing_transfer_state('t_src', 't_bigkey');
CREATE TABLE t_notoken (id int PRIMARY KEY, other fencing_token);
SELECT fencing_transfer_state('t_src', 't_notoken');
SELECT fencing_transfer_state('t_src', 't_src');
-- a target fenced in table scope would lose its own HWM to a row policy
CREATE TABLE t_tab (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('t_tab', scope => 'table');
SELECT fencing_advance('t_tab', 99);
SELECT fencing_transfer_state('t_src', 't_tab');
DROP TABLE t_tab;
SELECT fencing_high_water('t_src', '{"id": 1}') AS t_src_still;
-- a table that is not fenced has nothing to hand on
CREATE TABLE t_plain (id int PRIMARY KEY);
SELECT fencing_transfer_state('t_plain', 't_bigkey');
-- owners only
CREATE ROLE swap_stranger;
SET ROLE swap_stranger;
SELECT fencing_transfer_state('t_src', 't_bigkey');
BEGIN;
RESET ROLE;
DROP TABLE t_src;
SET ROLE swap_stranger;
SELECT fencing_forget_dropped('public.t_src');
ROLLBACK;
RESET ROLE;
-- transferring back undoes a swap
CREATE TABLE t_back (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_transfer_state('t_src', 't_back');
INSERT INTO t_src VALUES (9, 1);
SELECT fencing_transfer_state('t_back', 't_src');
SELECT fencing_high_water('t_src', '{"id": 1}') AS t_src_back;
BEGIN; SET LOCAL fencing.token = 4; INSERT INTO t_src VALUES (9); COMMIT;
DROP TABLE t_bigkey, t_notoken, t_plain, t_back;

-- DROP of a fenced table with state keeps it under its name until the
-- transaction ends; a table that takes the name in the same transaction
-- (CREATE, or a RENAME as Alembic's batch mode does) gets it.
BEGIN;
DROP TABLE t_src;
SELECT table_name, scope, table_hwm, tombstones FROM fencing_dropped_state;
CREATE TABLE t_src (id int PRIMARY KEY, fence fencing_token, extra int);
SELECT count(*) AS kept FROM fencing_dropped_state;
COMMIT;
SELECT fencing_high_water('t_src', '{"id": 1}') AS recreated;
BEGIN; SET LOCAL fencing.token = 2; INSERT INTO t_src VALUES (1); ROLLBACK;
BEGIN;
DROP TABLE ledger;
CREATE TABLE ledger_tmp (id int PRIMARY KEY, amount int, fence fencing_token, more text);
ALTER TABLE ledger_tmp RENAME TO ledger;
COMMIT;
SELECT table_name, scope FROM fencing_protected WHERE table_name = 'ledger'::regclass;
SELECT fencing_high_water('ledger') AS ledger_recreated;
-- a table of that name that cannot carry it is refused ...
BEGIN;
DROP TABLE ledger;
CREATE TABLE ledger (id int PRIMARY KEY, amount int);
ROLLBACK;
BEGIN;
DROP TABLE t_src;
CREATE TABLE t_src (id bigint PRIMARY KEY, fence fencing_token);
ROLLBACK;
-- ... unless the state is discarded first: the owner's call, logged
SELECT fencing_forget_dropped('nope.nothing');
BEGIN;
DROP TABLE ledger;
SELECT fencing_forget_dropped('public.ledger');
SELECT count(*) AS kept FROM fencing_dropped_state;
CREATE TABLE ledger (id int PRIMARY KEY, amount int);
COMMIT;
SELECT target, key, old_hwm FROM fencing.reset_log WHERE target LIKE 'dropped table%';
-- a DROP that no table follows in its transaction deletes the state with
-- the data, as it always did; a later table of the name starts afresh
CREATE TABLE gone (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('gone', scope => 'table');
SELECT fencing_advance('gone', 70);
DROP TABLE gone;
CREATE TABLE gone (id int PRIMARY KEY, fence fencing_token);
SELECT table_name, scope FROM fencing_protected WHERE table_name = 'gone'::regclass;
SELECT fencing_high_water('gone', '{"id": 1}') AS gone_fresh;

-- A row-scope key dropped while it keys tombstones is held: the table
-- refuses writes until the same key is added back; another key is refused.
CREATE TABLE held (id int PRIMARY KEY, v int, fence fencing_token);
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO held VALUES (1, 1), (2, 2); COMMIT;
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM held WHERE id = 2; COMMIT;
ALTER TABLE held DROP CONSTRAINT held_pkey;
BEGIN; SET LOCAL fencing.token = 30; INSERT INTO held VALUES (5, 1); ROLLBACK;
ALTER TABLE held ADD PRIMARY KEY (id, v);
ALTER TABLE held ADD PRIMARY KEY (id);
BEGIN; SET LOCAL fencing.token = 15; INSERT INTO held VALUES (2, 1); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 30; INSERT INTO held VALUES (5, 1); COMMIT;
-- dropped without its key: the tombstones are kept under the held key
BEGIN;
ALTER TABLE held DROP CONSTRAINT held_pkey;
DROP TABLE held;
SELECT table_name, tombstones FROM fencing_dropped_state;
CREATE TABLE held (id int PRIMARY KEY, v int, fence fencing_token);
COMMIT;
BEGIN; SET LOCAL fencing.token = 15; INSERT INTO held VALUES (2, 1); ROLLBACK;

DROP TABLE acct, orders, t_src, held, ledger, gone, ev;
SELECT count(*) AS held_keys FROM fencing.held_key;
DROP ROLE swap_stranger;
