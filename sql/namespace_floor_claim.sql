-- A namespace whose only state is its floor (every HWM retired into it)
-- arrives without its owner row on a logical subscriber or in a partial
-- restore (fencing.resource_namespace does not travel): no role may claim it
-- by its first use, as none may a namespace holding HWMs or leases.
SET client_min_messages = warning;
CREATE ROLE fence_floor_claimer;
INSERT INTO fencing.resource_floor (namespace, floor, enabled) VALUES ('floor_only', 1000, true);
SET ROLE fence_floor_claimer;
\set VERBOSITY terse
SELECT fencing_enable_retirement('floor_only');
SELECT count(*) FROM fencing_acquire('job', 'claimer', '1 min', namespace => 'floor_only');
\set VERBOSITY default
RESET ROLE;
SELECT count(*) AS claimed FROM fencing.resource_namespace WHERE name = 'floor_only';
-- A superuser gives it its owner, as the hint says; then its owner uses it.
INSERT INTO fencing.resource_namespace (name, owner) VALUES ('floor_only', 'fence_floor_claimer');
SET ROLE fence_floor_claimer;
SELECT fencing_acquire('job', 'claimer', '1 min', namespace => 'floor_only')::text::bigint > 1000 AS above_floor;
RESET ROLE;
DELETE FROM fencing.lease WHERE namespace = 'floor_only';
DELETE FROM fencing.resource_hwm WHERE namespace = 'floor_only';
DELETE FROM fencing.resource_floor WHERE namespace = 'floor_only';
DELETE FROM fencing.resource_namespace WHERE name = 'floor_only';
DROP ROLE fence_floor_claimer;
