-- fencing_retire_due() (the worker's and the pg_cron recipe's call) runs the
-- automatic policies of several owners in one call: one owner's policy that
-- fails must not keep the others from running. An idle interval whose
-- cutoff (now() - idle) is out of range fails in every round.
SET client_min_messages = warning;
CREATE ROLE regress_due_alice;
CREATE ROLE regress_due_mallory;
SET ROLE regress_due_alice;
SELECT fencing_resource_advance('a1', 5, 'zz_due_alice');
SELECT fencing_enable_retirement('zz_due_alice', '0 s');
RESET ROLE;
SET ROLE regress_due_mallory;
-- Sorted before alice's namespace; its cutoff is before 4713 BC.
SELECT fencing_resource_advance('m1', 5, '00_due_mallory');
SELECT fencing_enable_retirement('00_due_mallory', '100000000 years');
RESET ROLE;
-- As the worker runs it: alice's HWM is retired, mallory's policy skipped.
SET client_min_messages = error;
SELECT fencing_retire_due() AS retired;
SET client_min_messages = warning;
SELECT namespace, floor FROM fencing.resource_floor
 WHERE namespace IN ('zz_due_alice', '00_due_mallory') ORDER BY namespace;
SELECT count(*) AS alice_hwms_left FROM fencing.resource_hwm WHERE namespace = 'zz_due_alice';
-- The skipped policy's owner still gets the error from a call of its own.
SET ROLE regress_due_mallory;
\set VERBOSITY sqlstate
SELECT fencing_retire('00_due_mallory', '100000000 years');
\set VERBOSITY default
RESET ROLE;
SELECT fencing_resource_reset(r, ns) FROM (VALUES ('m1', '00_due_mallory')) v(r, ns);
DELETE FROM fencing.resource_floor WHERE namespace IN ('zz_due_alice', '00_due_mallory');
DELETE FROM fencing.resource_hwm WHERE namespace IN ('zz_due_alice', '00_due_mallory');
DELETE FROM fencing.resource_namespace WHERE name IN ('zz_due_alice', '00_due_mallory');
DROP ROLE regress_due_alice, regress_due_mallory;
