-- A transaction that raised an HWM commits with synchronous_commit at least
-- 'on' (src/pg/hwm/durability.cpp). The setting's variable is overridden at
-- PRE_COMMIT / PRE_PREPARE, without a GUC stack entry, and put back at the
-- COMMIT / PREPARE / ABORT event: nothing else would put it back. After every
-- way such a transaction can end, the session's own value must be in force
-- again (SHOW reads the variable itself). The wait itself is
-- test/t/020_failover_sync.pl's; the flush under a crash test/t/010_crash.pl's.
\set VERBOSITY terse
\set SHOW_CONTEXT never
CREATE TABLE dg (id serial PRIMARY KEY, res text NOT NULL, fence fencing_token);
SELECT fencing_protect('dg', scope => 'resource', resource_column => 'res');
CREATE TABLE dgt (id serial PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('dgt', scope => 'table');
CREATE TABLE dgr (id int PRIMARY KEY, fence fencing_token);

-- Raising commits, autocommit and in a block, in every scope, under each
-- session value below 'on'; remote_apply is above it and is not touched.
SET synchronous_commit = off;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 10);
SHOW synchronous_commit;
BEGIN;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 11);
COMMIT;
SHOW synchronous_commit;
SET synchronous_commit = local;
INSERT INTO dgt (fence) VALUES (10);
SHOW synchronous_commit;
SET synchronous_commit = remote_write;
INSERT INTO dgr VALUES (1, 10);
SHOW synchronous_commit;
SET synchronous_commit = remote_apply;
UPDATE dgr SET fence = 11 WHERE id = 1;
SHOW synchronous_commit;
SET synchronous_commit = off;
-- A write at the HWM raises nothing.
INSERT INTO dg (res, fence) VALUES ('durability-guc', 11);
SHOW synchronous_commit;

-- SET LOCAL before or after the raise: the session value afterwards.
BEGIN;
SET LOCAL synchronous_commit = local;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 12);
COMMIT;
SHOW synchronous_commit;
BEGIN;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 13);
SET LOCAL synchronous_commit = remote_write;
COMMIT;
SHOW synchronous_commit;
-- A plain SET in the raising transaction outlives it, as SET does.
BEGIN;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 14);
SET synchronous_commit = local;
COMMIT;
SHOW synchronous_commit;
SET synchronous_commit = off;

-- Raising transactions committed by a procedure, one after another.
CREATE PROCEDURE dg_raises(first bigint, n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 0 .. n - 1 LOOP
    INSERT INTO dg (res, fence) VALUES ('durability-guc', first + i);
    COMMIT;
    RAISE NOTICE 'after commit %: %', i, current_setting('synchronous_commit');
  END LOOP;
END $$;
CALL dg_raises(15, 3);
SHOW synchronous_commit;

-- Rolled back, and rolled back to a savepoint.
BEGIN;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 30);
ROLLBACK;
SHOW synchronous_commit;
BEGIN;
SAVEPOINT s;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 30);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SHOW synchronous_commit;

-- PREPARE TRANSACTION that fails after the PRE_PREPARE event (the
-- transaction aborts there): temporary objects, a GID in use.
CREATE TEMP TABLE dg_temp (x int);
BEGIN;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 31);
INSERT INTO dg_temp VALUES (1);
PREPARE TRANSACTION 'durability_guc';
SHOW synchronous_commit;
-- PREPARE that succeeds, then one with the same GID.
BEGIN;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 32);
PREPARE TRANSACTION 'durability_guc';
SHOW synchronous_commit;
BEGIN;
INSERT INTO dgt (fence) VALUES (11);
PREPARE TRANSACTION 'durability_guc';
SHOW synchronous_commit;
COMMIT PREPARED 'durability_guc';
SHOW synchronous_commit;

-- A deferred constraint failing at COMMIT (before PRE_COMMIT).
CREATE TABLE dg_deferred (x int UNIQUE DEFERRABLE INITIALLY DEFERRED);
BEGIN;
INSERT INTO dg (res, fence) VALUES ('durability-guc', 33);
INSERT INTO dg_deferred VALUES (1), (1);
COMMIT;
SHOW synchronous_commit;

-- What committed: 32 (prepared, then committed); 31 and 33 failed, 30 rolled back.
SELECT fencing_resource_high_water('durability-guc') AS resource_hwm,
       fencing_high_water('dgt') AS table_hwm;
-- (The HWM stays: a reset would be logged in fencing.reset_log, which
-- fencing_protect reads whole.)
RESET synchronous_commit;
DROP TABLE dg, dgt, dgr, dg_deferred, dg_temp;
DROP PROCEDURE dg_raises(bigint, int);
