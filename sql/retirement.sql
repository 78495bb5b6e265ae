-- Retirement: idle resource HWMs, ended leases and tombstones folded into a
-- floor per namespace or table; keys with no entry of their own judged
-- against it; the opt-in, the privileges, and nothing ever lowered.
\set SHOW_CONTEXT never
\set ON_ERROR_STOP 0
CREATE ROLE regress_ret_alice;
CREATE ROLE regress_ret_bob;
CREATE SCHEMA ret AUTHORIZATION regress_ret_alice;
GRANT USAGE ON SCHEMA ret TO regress_ret_bob;

-- A job queue in namespace ret-jobs, owned by alice (her table claims it).
SET ROLE regress_ret_alice;
CREATE TABLE ret.jobs (id text PRIMARY KEY, state text NOT NULL, fence fencing_token);
SELECT fencing_protect('ret.jobs', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'ret-jobs');
RESET ROLE;

-- Not enabled: refused, naming the opt-in.
SELECT fencing_retire('ret-jobs', '0 s');
\echo :LAST_ERROR_SQLSTATE

-- Bad input.
SELECT fencing_retire('ret-jobs', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_retire('ret-jobs', '-1 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_retire('ret-jobs', '0 s', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_retire(NULL::text, '0 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_enable_retirement('ret-jobs', '-1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_enable_retirement('ret.jobs'::regclass);   -- resource scope keeps no tombstones
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE ret.plain (id int PRIMARY KEY);
SELECT fencing_enable_retirement('ret.plain'::regclass);  -- not fenced
\echo :LAST_ERROR_SQLSTATE
DROP TABLE ret.plain;

-- Privileges: only the namespace's owner (or a superuser) opts in and retires.
SET ROLE regress_ret_bob;
SELECT fencing_enable_retirement('ret-jobs');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_retire('ret-jobs', '0 s');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_disable_retirement('ret-jobs');
\echo :LAST_ERROR_SQLSTATE
-- The floors are the extension's own: nobody writes them directly.
UPDATE fencing.resource_floor SET floor = 0;
SELECT count(*) FROM fencing.resource_floor;
RESET ROLE;
SET ROLE regress_ret_alice;
SELECT fencing_enable_retirement('ret-jobs');
RESET ROLE;
SELECT namespace, floor, enabled, idle, retired, retired_at IS NULL AS never
  FROM fencing.resource_floor WHERE namespace = 'ret-jobs';

-- Job j1: worker A's lease expires while it is still working; worker B gets a
-- new token, completes j1 and releases; the row stays. Job j2 is running
-- (live lease).
SELECT fencing_acquire('j1', 'worker-a', '10 ms', namespace => 'ret-jobs') AS a_token \gset
INSERT INTO ret.jobs VALUES ('j1', 'queued', :a_token);
SELECT pg_sleep(0.05);
SELECT fencing_acquire('j1', 'worker-b', '1 hour', namespace => 'ret-jobs') AS b_token \gset
UPDATE ret.jobs SET state = 'done', fence = :b_token WHERE id = 'j1';
SELECT fencing_release('j1', :b_token, namespace => 'ret-jobs');
SELECT fencing_acquire('j2', 'worker-c', '1 hour', namespace => 'ret-jobs') AS c_token \gset
INSERT INTO ret.jobs VALUES ('j2', 'running', :c_token);
-- An HWM raised by a write alone (a token from elsewhere), no lease.
BEGIN; SET LOCAL fencing.token = 2; INSERT INTO ret.jobs VALUES ('j3', 'queued'); COMMIT;
SELECT resource, hwm FROM fencing.resource_hwm WHERE namespace = 'ret-jobs' ORDER BY resource;

-- Nothing idle for a day: nothing retired, the floor unchanged.
SELECT fencing_retire('ret-jobs', '1 day') AS retired;
-- Batches of one, at most two entries in this call.
SET fencing.retire_batch_size = 1;
SET ROLE regress_ret_alice;
SELECT fencing_retire('ret-jobs', '0 s', max_entries => 2) AS retired;
RESET ROLE;
-- Then the rest: j1's HWM and its ended lease, j3's HWM; j2's live lease and
-- its HWM stay.
SELECT fencing_retire('ret-jobs', '0 s') AS retired;
RESET fencing.retire_batch_size;
SELECT resource, hwm FROM fencing.resource_hwm WHERE namespace = 'ret-jobs' ORDER BY resource;
SELECT resource, holder FROM fencing.lease WHERE namespace = 'ret-jobs' ORDER BY resource;
SELECT floor = :b_token AS floor_is_b_token, retired, retired_at IS NOT NULL AS retired_at_set
  FROM fencing.resource_floor WHERE namespace = 'ret-jobs';

-- The stale completion of the retired job (worker A, token a) is refused
-- against the floor, with the usual DETAIL and the floor said after it.
UPDATE ret.jobs SET state = 'done by a', fence = :a_token WHERE id = 'j1';
\echo :LAST_ERROR_SQLSTATE
-- Non-strict, the floor itself is admitted, as the entry's own HWM was.
BEGIN; UPDATE ret.jobs SET state = 'again by b', fence = :b_token WHERE id = 'j1'; ROLLBACK;
SELECT state FROM ret.jobs WHERE id = 'j1';
-- A new job's lease, and the retired job's, are issued above the floor.
SELECT fencing_acquire('j9', 'worker-d', '1 hour', namespace => 'ret-jobs') > :b_token AS new_job_above_floor;
SELECT fencing_acquire('j1', 'worker-e', '1 hour', namespace => 'ret-jobs') > :b_token AS retired_job_above_floor;
-- HWM queries report the effective value: the floor for a key without an entry.
SELECT fencing_resource_high_water('j3', 'ret-jobs') = :b_token AS j3_reads_floor,
       fencing_resource_high_water('never-seen', 'ret-jobs') = :b_token AS new_key_reads_floor,
       fencing_high_water('ret.jobs', '{"id": "j3"}') = :b_token AS table_query_reads_floor,
       fencing_resource_high_water('j2', 'ret-jobs') = :c_token AS live_keeps_own;

-- Nobody lowers: retiring entries below the floor keeps the floor.
BEGIN; SET LOCAL fencing.token = :b_token; INSERT INTO ret.jobs VALUES ('j4', 'queued'); COMMIT;
SELECT fencing_release('j9', fencing_resource_high_water('j9', 'ret-jobs'), 'ret-jobs');
SELECT fencing_retire('ret-jobs', '0 s') AS retired;
SELECT floor >= :b_token AS floor_kept FROM fencing.resource_floor WHERE namespace = 'ret-jobs';

-- Re-enabling sets the automatic policy; fencing_retire_due runs it for its
-- owner, not for another role.
SET ROLE regress_ret_alice;
SELECT fencing_enable_retirement('ret-jobs', '0 s');
RESET ROLE;
BEGIN; SET LOCAL fencing.token = 900; INSERT INTO ret.jobs VALUES ('j5', 'queued'); COMMIT;
SET ROLE regress_ret_bob;
SELECT fencing_retire_due() AS bob_retired;
RESET ROLE;
SET ROLE regress_ret_alice;
SELECT fencing_retire_due() >= 1 AS alice_retired;
RESET ROLE;
SELECT idle, floor FROM fencing.resource_floor WHERE namespace = 'ret-jobs';

-- Disabled: no further retirement, and the floor still judges.
SET ROLE regress_ret_alice;
SELECT fencing_disable_retirement('ret-jobs');
RESET ROLE;
SELECT fencing_retire('ret-jobs', '0 s');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO ret.jobs VALUES ('j5', 'stale', 899);
SELECT fencing_retire_due() AS disabled_policy_skipped;

-- Strict mode and the replay rule at the floor.
CREATE TABLE ret.strict_jobs (id text PRIMARY KEY, note text, fence fencing_token);
SELECT fencing_protect('ret.strict_jobs', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'ret-strict', strict => true);
SELECT fencing_enable_retirement('ret-strict');
INSERT INTO ret.strict_jobs VALUES ('s1', 'x', 10);
SELECT fencing_retire('ret-strict', '0 s') AS retired;
-- The row stays; its resource has no HWM of its own, the floor is 10.
-- An UPDATE at the floor that changes nothing is a replay: admitted.
UPDATE ret.strict_jobs SET note = 'x', fence = 10 WHERE id = 's1';
-- One that changes the row is not above the floor: refused.
UPDATE ret.strict_jobs SET note = 'y', fence = 10 WHERE id = 's1';
-- A new key at the floor: refused in strict mode.
INSERT INTO ret.strict_jobs VALUES ('s2', 'x', 10);
-- Above it: admitted, and this transaction may write with it again.
BEGIN;
INSERT INTO ret.strict_jobs VALUES ('s2', 'x', 11);
UPDATE ret.strict_jobs SET note = 'again', fence = 11 WHERE id = 's2';
COMMIT;
SELECT id, note, fence FROM ret.strict_jobs ORDER BY id;

-- Row scope: tombstones into the table's floor.
SET ROLE regress_ret_alice;
CREATE TABLE ret.items (id int PRIMARY KEY, note text, fence fencing_token);
SELECT fencing_protect('ret.items');
BEGIN; SET LOCAL fencing.token = 40;
INSERT INTO ret.items VALUES (1, 'a'), (2, 'b'), (3, 'c');
DELETE FROM ret.items WHERE id IN (1, 2);
COMMIT;
RESET ROLE;
SELECT key, hwm FROM fencing.row_tombstone WHERE relid = 'ret.items'::regclass ORDER BY key;
SELECT fencing_retire('ret.items'::regclass, '0 s');
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_ret_bob;
SELECT fencing_enable_retirement('ret.items'::regclass);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE regress_ret_alice;
SELECT fencing_enable_retirement('ret.items'::regclass);
SELECT fencing_retire('ret.items'::regclass, '0 s') AS retired;
RESET ROLE;
SELECT count(*) AS tombstones FROM fencing.row_tombstone WHERE relid = 'ret.items'::regclass;
SELECT relid, floor, retired FROM fencing.tombstone_floor WHERE relid = 'ret.items'::regclass;
-- A deleted key re-inserted with a stale token is refused against the floor,
-- and so is a key never seen (the floor cannot tell them apart).
BEGIN; SET LOCAL fencing.token = 39; INSERT INTO ret.items VALUES (1, 'stale'); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 39; INSERT INTO ret.items VALUES (7, 'new'); ROLLBACK;
-- A token-less INSERT needs a token once tombstones were retired.
BEGIN; SELECT fencing_allow_unfenced('ret.items', 'regress'); INSERT INTO ret.items (id, note) VALUES (8, 'unfenced'); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 40; INSERT INTO ret.items VALUES (1, 'at floor'); COMMIT;
SELECT fencing_high_water('ret.items', '{"id": 99}') AS effective_hwm;
-- A key's own tombstone still counts above the floor.
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM ret.items WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 45; INSERT INTO ret.items VALUES (1, 'stale'); ROLLBACK;
-- A reset of one key falls back to the floor.
SELECT fencing_reset('ret.items', '{"id": 1}') AS reset_one;
SELECT fencing_high_water('ret.items', '{"id": 1}') AS after_reset_one;
-- A reset of the whole table removes its floor too, and logs it.
SELECT fencing_reset('ret.items') AS reset_all;
SELECT count(*) AS floors FROM fencing.tombstone_floor WHERE relid = 'ret.items'::regclass;
SELECT key, old_hwm FROM fencing.reset_log WHERE target = 'ret.items' AND key = '(floor)';
BEGIN; SET LOCAL fencing.token = 1; INSERT INTO ret.items VALUES (5, 'after reset'); COMMIT;

-- A dropped table's floor goes with it.
CREATE TABLE ret.gone (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ret.gone');
SELECT fencing_enable_retirement('ret.gone'::regclass, '1 hour');
SELECT count(*) FROM fencing.tombstone_floor WHERE relid = 'ret.gone'::regclass;
SELECT 'ret.gone'::regclass::oid AS gone_oid \gset
DROP TABLE ret.gone;
SELECT count(*) AS left_behind FROM fencing.tombstone_floor WHERE relid = :gone_oid;

-- Partitions: the floor is the home's (the table fencing_protect named), a
-- leaf has none of its own; DETACH copies it to the detached table (which
-- then keeps its own, retirement off), ATTACH keeps the higher of the two.
CREATE TABLE ret.pt (id int PRIMARY KEY, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE ret.pt_1 PARTITION OF ret.pt FOR VALUES FROM (0) TO (100);
CREATE TABLE ret.pt_2 PARTITION OF ret.pt FOR VALUES FROM (100) TO (200);
SELECT fencing_protect('ret.pt');
INSERT INTO ret.pt VALUES (1, 10), (101, 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM ret.pt WHERE id IN (1, 101); COMMIT;
SELECT fencing_enable_retirement('ret.pt_1'::regclass);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_enable_retirement('ret.pt'::regclass);
SELECT fencing_retire('ret.pt'::regclass, '0 s') AS retired;
ALTER TABLE ret.pt DETACH PARTITION ret.pt_2;
SELECT relid, floor, enabled FROM fencing.tombstone_floor
 WHERE relid IN ('ret.pt'::regclass, 'ret.pt_2'::regclass) ORDER BY 1;
BEGIN; SET LOCAL fencing.token = 25; INSERT INTO ret.pt_2 VALUES (101); ROLLBACK;
CREATE TABLE ret.other (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ret.other');
INSERT INTO ret.other VALUES (150, 60);
BEGIN; SET LOCAL fencing.token = 70; DELETE FROM ret.other; COMMIT;
SELECT fencing_enable_retirement('ret.other'::regclass);
SELECT fencing_retire('ret.other'::regclass, '0 s') AS retired;
SELECT fencing_unprotect('ret.other');
ALTER TABLE ret.pt ATTACH PARTITION ret.other FOR VALUES FROM (100) TO (200);
SELECT relid, floor, enabled FROM fencing.tombstone_floor
 WHERE relid IN ('ret.pt'::regclass, 'ret.other'::regclass) ORDER BY 1;
BEGIN; SET LOCAL fencing.token = 69; INSERT INTO ret.pt VALUES (150); ROLLBACK;
BEGIN; SET LOCAL fencing.token = 69; INSERT INTO ret.pt VALUES (2); ROLLBACK;
DROP TABLE ret.pt, ret.pt_2;

-- The SQL objects of an older version (before ALTER EXTENSION UPDATE): the
-- library refuses retirement and every other path keeps working.
BEGIN;
ALTER TABLE fencing.resource_hwm DROP COLUMN raised_at;
SAVEPOINT s;
SELECT fencing_retire('ret-jobs', '0 s');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO SAVEPOINT s;
INSERT INTO ret.jobs VALUES ('j6', 'old shape', 1000);
UPDATE ret.jobs SET state = 'raised', fence = 1001 WHERE id = 'j6';
SELECT fencing_resource_high_water('j6', 'ret-jobs');
UPDATE ret.jobs SET state = 'stale', fence = 1000 WHERE id = 'j6';
ROLLBACK TO SAVEPOINT s;
-- Tombstones without raised_at: left, raised, and judged as before.
ALTER TABLE fencing.row_tombstone DROP COLUMN raised_at;
INSERT INTO ret.items VALUES (20, 'old shape', 60);
SET LOCAL fencing.token = 61;
DELETE FROM ret.items WHERE id = 20;
SELECT fencing_advance('ret.items', 62, '{"id": 20}') AS advanced;
SAVEPOINT t;
INSERT INTO ret.items VALUES (20, 'stale', 61);
ROLLBACK TO SAVEPOINT t;
SELECT fencing_high_water('ret.items', '{"id": 20}') AS tombstone;
ROLLBACK;

-- Enabling retirement claims an unclaimed namespace for the caller, so the
-- first role to use the namespace afterwards does not own the policy.
SELECT fencing_enable_retirement('ret-claimed', idle => '1 h');
SELECT owner::text = current_user AS claimed_by_enabler FROM fencing.resource_namespace
 WHERE name = 'ret-claimed';
SET ROLE regress_ret_bob;
SELECT fencing_acquire('r', 'bob', '1 min', namespace => 'ret-claimed');
SELECT fencing_disable_retirement('ret-claimed');
SELECT fencing_enable_retirement('ret-bobs', idle => '1 h');
RESET ROLE;
SELECT owner FROM fencing.resource_namespace WHERE name = 'ret-bobs';

DROP TABLE ret.jobs, ret.strict_jobs, ret.items;
DELETE FROM fencing.resource_floor WHERE namespace IN ('ret-claimed', 'ret-bobs');
DELETE FROM fencing.resource_namespace WHERE name IN ('ret-claimed', 'ret-bobs');
DELETE FROM fencing.resource_floor WHERE namespace IN ('ret-jobs', 'ret-strict');
SELECT fencing_resource_reset(resource, namespace) FROM fencing.resource_hwm
 WHERE namespace IN ('ret-jobs', 'ret-strict') ORDER BY resource;
DELETE FROM fencing.lease WHERE namespace IN ('ret-jobs', 'ret-strict');
DELETE FROM fencing.resource_namespace WHERE name IN ('ret-jobs', 'ret-strict');
DROP SCHEMA ret;
DROP ROLE regress_ret_alice, regress_ret_bob;
