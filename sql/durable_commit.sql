-- A transaction that raised an HWM commits with synchronous_commit at least
-- 'on' (pg/hwm/durability.cpp), for its commit record only: the session's own
-- setting is back afterwards, whatever way the transaction ended. (The flush
-- and the standby wait themselves are shown by test/t/010_crash.pl and
-- test/t/020_failover_sync.pl.)
\set VERBOSITY terse
CREATE TABLE dur_row (id int PRIMARY KEY, v int, fence fencing_token);
CREATE TABLE dur_res (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('dur_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'durable_commit');
INSERT INTO dur_row VALUES (1, 0, 1);
INSERT INTO dur_res VALUES (1, 's', 1);

SET synchronous_commit = off;
-- A raise: inside the transaction the setting is the session's ...
BEGIN;
UPDATE dur_res SET fence = 2 WHERE id = 1;
SHOW synchronous_commit;
COMMIT;
-- ... and after its commit too.
SHOW synchronous_commit;

-- Every session value comes back.
SET synchronous_commit = remote_write;
UPDATE dur_row SET fence = 3 WHERE id = 1;
SHOW synchronous_commit;
SET synchronous_commit = local;
UPDATE dur_res SET fence = 3 WHERE id = 1;
SHOW synchronous_commit;

-- SET LOCAL inside the raising transaction: the session value after it.
SET synchronous_commit = off;
BEGIN;
SET LOCAL synchronous_commit = local;
UPDATE dur_res SET fence = 4 WHERE id = 1;
COMMIT;
SHOW synchronous_commit;

-- A raising transaction that fails at COMMIT (a deferred constraint).
CREATE TABLE dur_fk_parent (id int PRIMARY KEY);
CREATE TABLE dur_fk (id int PRIMARY KEY, parent int
    REFERENCES dur_fk_parent DEFERRABLE INITIALLY DEFERRED, fence fencing_token);
BEGIN;
INSERT INTO dur_fk VALUES (1, 99, 10);
UPDATE dur_res SET fence = 5 WHERE id = 1;
COMMIT;
SHOW synchronous_commit;
-- The failed transaction's raise is gone; the next raise works and restores.
SELECT fencing_resource_high_water('s', 'durable_commit');
UPDATE dur_res SET fence = 5 WHERE id = 1;
SHOW synchronous_commit;

-- A raise rolled back with its savepoint forces nothing; restored either way.
BEGIN;
SAVEPOINT a;
UPDATE dur_res SET fence = 6 WHERE id = 1;
ROLLBACK TO SAVEPOINT a;
COMMIT;
SHOW synchronous_commit;
SELECT fencing_resource_high_water('s', 'durable_commit');

-- A writer at the HWM raises nothing: its transaction keeps the session's mode.
UPDATE dur_res SET fence = 5 WHERE id = 1;
SHOW synchronous_commit;

RESET synchronous_commit;
DROP TABLE dur_row, dur_res, dur_fk, dur_fk_parent;
