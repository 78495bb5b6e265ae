-- Leases that issue tokens (fencing_acquire/renew/release, fencing_leases) and
-- advancing an HWM before the first read (fencing_resource_advance,
-- fencing_advance).
\set VERBOSITY terse
\set SHOW_CONTEXT never
CREATE ROLE regress_lease_alice;
CREATE ROLE regress_lease_bob;
CREATE SCHEMA lease AUTHORIZATION regress_lease_alice;
GRANT USAGE ON SCHEMA lease TO regress_lease_bob;

-- Fence on acquire: a token above the resource's HWM, and the HWM raised to it.
CREATE TABLE lease.orders (id int PRIMARY KEY, shard text NOT NULL, note text,
                           fence fencing_token);
SELECT fencing_protect('lease.orders', scope => 'resource', resource_column => 'shard');
INSERT INTO lease.orders VALUES (1, 'lease-s1', 'seed', 40);
SELECT fencing_acquire('lease-s1', 'alice', '1 hour') AS alice;          -- 41
SELECT fencing_resource_high_water('lease-s1') AS hwm;                  -- 41
-- The predecessor (token 40) is fenced before the new holder wrote anything.
UPDATE lease.orders SET note = 'stale', fence = 40 WHERE id = 1;
-- Another holder gets NULL while the lease is live.
SELECT fencing_acquire('lease-s1', 'bob', '1 hour') IS NULL AS busy;
SELECT fencing_acquire('lease-s1', 'bob', '1 hour', wait => '50 ms') IS NULL AS busy_after_wait;
SELECT resource, namespace, holder, token, live,
       expires_at - acquired_at AS ttl FROM fencing_leases WHERE resource = 'lease-s1';
-- Renew and release: only the live lease's token; a stale token changes nothing.
SELECT fencing_renew('lease-s1', 40, '1 hour') AS stale_renew,
       fencing_renew('lease-s1', 41, '2 hours') AS renew;
SELECT expires_at - acquired_at >= interval '2 hours' AS renewed_for_2h FROM fencing_leases WHERE resource = 'lease-s1';
SELECT fencing_release('lease-s1', 40) AS stale_release,
       fencing_release('lease-s1', 41) AS release,
       fencing_release('lease-s1', 41) AS again;
SELECT holder, token, live FROM fencing_leases WHERE resource = 'lease-s1';
SELECT fencing_renew('lease-s1', 41, '1 hour') AS renew_released;
-- Tokens strictly increase, also above tokens written from elsewhere.
SELECT fencing_acquire('lease-s1', 'bob', '1 hour') AS bob;             -- 42
SELECT fencing_release('lease-s1', 42);
INSERT INTO lease.orders VALUES (2, 'lease-s1', 'from etcd', 500);
SELECT fencing_acquire('lease-s1', 'carol', '1 hour') AS carol;         -- 501
SELECT fencing_release('lease-s1', 501);
-- An expired lease is free; its holder can no longer renew or release it.
SELECT fencing_acquire('lease-s2', 'dave', '10 ms') AS dave;            -- 1
SELECT pg_sleep(0.05);
SELECT live FROM fencing_leases WHERE resource = 'lease-s2';
SELECT fencing_renew('lease-s2', 1, '1 hour') AS renew_expired,
       fencing_release('lease-s2', 1) AS release_expired;
SELECT fencing_acquire('lease-s2', 'erin', '1 hour', wait => '1 s') AS erin;  -- 2
-- Acquire and release in one transaction; a rolled-back acquire issues nothing
-- (its token may be issued again: nobody was ever told it).
BEGIN;
SELECT fencing_release('lease-s2', 2);
SELECT fencing_acquire('lease-s2', 'frank', '1 hour') AS frank;         -- 3
ROLLBACK;
SELECT holder, token, live FROM fencing_leases WHERE resource = 'lease-s2';
SELECT fencing_release('lease-s2', 2);

-- Arguments (SQLSTATEs).
\set VERBOSITY sqlstate
SELECT fencing_acquire(NULL, 'x', '1 s');
SELECT fencing_acquire('lease-s3', NULL, '1 s');
SELECT fencing_acquire('lease-s3', 'x', NULL);
SELECT fencing_acquire('lease-s3', 'x', '0 s');
SELECT fencing_acquire('lease-s3', 'x', '-1 s');
SELECT fencing_acquire('lease-s3', 'x', '1 s', wait => '-1 s');
SELECT fencing_acquire('lease-s3', 'x', '1 s', namespace => NULL);
SELECT fencing_acquire('lease-s3', 'x', '1 s', namespace => '');
SELECT fencing_renew('lease-s3', NULL, '1 s');
SELECT fencing_renew('lease-s3', 1, '0 s');
SELECT fencing_release('lease-s3', NULL);
\set VERBOSITY terse
-- The token space is finite.
SELECT fencing_resource_advance('lease-max', 9223372036854775807);
SELECT fencing_acquire('lease-max', 'x', '1 s');

\set VERBOSITY default
-- Privileges: the namespace owner's. 'default' belongs to the extension's
-- owner; an unclaimed namespace is claimed by its first acquirer.
SET SESSION AUTHORIZATION regress_lease_bob;
SELECT fencing_acquire('lease-s9', 'bob', '1 hour');
SELECT fencing_release('lease-s1', 501);
SELECT fencing_resource_advance('lease-s1', 9999);
SELECT count(*) AS default_leases_visible FROM fencing_leases WHERE namespace = 'default';
SELECT fencing_acquire('job', 'bob', '1 hour', namespace => 'lease-bob') AS bob_job;  -- claims
SELECT resource, namespace, holder, token, live FROM fencing_leases;
RESET SESSION AUTHORIZATION;
SELECT name, owner FROM fencing.resource_namespace WHERE name = 'lease-bob';
SET SESSION AUTHORIZATION regress_lease_alice;
SELECT fencing_acquire('job', 'alice', '1 hour', namespace => 'lease-bob');
SELECT fencing_release('job', 1, namespace => 'lease-bob');
SELECT fencing_resource_advance('job', 5, namespace => 'lease-bob');
SELECT count(*) AS bob_leases_visible FROM fencing_leases;
RESET SESSION AUTHORIZATION;
-- A member of the owner role has its privileges.
GRANT regress_lease_bob TO regress_lease_alice;
SET SESSION AUTHORIZATION regress_lease_alice;
SELECT fencing_renew('job', 1, '1 hour', namespace => 'lease-bob') AS member_renews;
SELECT resource, holder, token FROM fencing_leases;
RESET SESSION AUTHORIZATION;
REVOKE regress_lease_bob FROM regress_lease_alice;
-- The extension's table is not readable directly.
SET SESSION AUTHORIZATION regress_lease_bob;
SELECT * FROM fencing.lease;
RESET SESSION AUTHORIZATION;

\set VERBOSITY terse
-- fencing_resource_advance: raises; equal is true; lower is false.
SELECT fencing_resource_advance('lease-r1', 34) AS first,
       fencing_resource_advance('lease-r1', 34) AS equal,
       fencing_resource_advance('lease-r1', 33) AS lower;
SELECT fencing_resource_high_water('lease-r1') AS hwm;

-- fencing_advance, row scope: the row's token, or the key's tombstone.
CREATE TABLE lease.inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO lease.inventory VALUES ('SKU-1', 10, 33);
SELECT fencing_advance('lease.inventory', 34, '{"item": "SKU-1"}') AS advanced,
       fencing_advance('lease.inventory', 34, '{"item": "SKU-1"}') AS equal,
       fencing_advance('lease.inventory', 33, '{"item": "SKU-1"}') AS lower;
SELECT item, stock, fence FROM lease.inventory;
UPDATE lease.inventory SET stock = 9, fence = 33 WHERE item = 'SKU-1';
SELECT fencing_advance('lease.inventory', 50, '{"item": "SKU-2"}') AS tombstone;
SELECT fencing_high_water('lease.inventory', '{"item": "SKU-2"}');
INSERT INTO lease.inventory VALUES ('SKU-2', 1, 49);
SELECT fencing_advance('lease.inventory', 34) AS no_key;
SELECT fencing_advance('lease.inventory', 34, '{"stock": 1}') AS bad_key;
SELECT fencing_advance('lease.inventory', NULL, '{"item": "SKU-1"}');
SELECT fencing_advance(NULL, 1);
-- Resource scope: by the resource column, in the table's namespace.
SELECT fencing_advance('lease.orders', 600, '{"shard": "lease-s1"}') AS advanced,
       fencing_advance('lease.orders', 599, '{"shard": "lease-s1"}') AS lower;
SELECT fencing_acquire('lease-s1', 'gina', '1 hour') AS gina;           -- 601
SELECT fencing_release('lease-s1', 601);
-- Table scope.
CREATE TABLE lease.ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('lease.ledger', scope => 'table');
SELECT fencing_advance('lease.ledger', 7) AS advanced;
SELECT fencing_high_water('lease.ledger');
SELECT fencing_advance('lease.ledger', 7, '{"id": 1}');
INSERT INTO lease.ledger VALUES (1, 6);
-- Strict mode: the advancing transaction may write with its token, nobody else.
CREATE TABLE lease.strict_t (id int PRIMARY KEY, shard text NOT NULL, fence fencing_token);
SELECT fencing_protect('lease.strict_t', scope => 'resource', resource_column => 'shard',
                       strict => true);
BEGIN;
SELECT fencing_advance('lease.strict_t', 10, '{"shard": "lease-st"}');
INSERT INTO lease.strict_t VALUES (1, 'lease-st', 10);
COMMIT;
INSERT INTO lease.strict_t VALUES (2, 'lease-st', 10);
-- An unprotected table.
CREATE TABLE lease.plain (id int PRIMARY KEY);
SELECT fencing_advance('lease.plain', 1);
-- Privileges: UPDATE on the table; in resource scope also the namespace's.
GRANT SELECT ON lease.inventory, lease.orders TO regress_lease_bob;
SET SESSION AUTHORIZATION regress_lease_bob;
SELECT fencing_advance('lease.inventory', 99, '{"item": "SKU-1"}');
RESET SESSION AUTHORIZATION;
GRANT UPDATE ON lease.inventory, lease.orders TO regress_lease_bob;
SET SESSION AUTHORIZATION regress_lease_bob;
SELECT fencing_advance('lease.inventory', 99, '{"item": "SKU-1"}') AS with_update;
SELECT fencing_advance('lease.orders', 999, '{"shard": "lease-s1"}');
RESET SESSION AUTHORIZATION;
-- Two names, no overloads: an untyped literal resolves to the table form.
SELECT fencing_advance('lease.inventory', 100, '{"item": "SKU-1"}') AS untyped;

DROP SCHEMA lease CASCADE;
DROP ROLE regress_lease_alice;
DROP ROLE regress_lease_bob;
DELETE FROM fencing.lease WHERE resource LIKE 'lease-%' OR namespace = 'lease-bob';
DELETE FROM fencing.resource_hwm WHERE resource LIKE 'lease-%';
DELETE FROM fencing.resource_namespace WHERE name = 'lease-bob';
