#!/usr/bin/env bash
# S1: resource scope, 40 resources (past the 32 share locks), each written
# twice in one INSERT ... SELECT (the second time from memory), paused at row
# 38 by an advisory lock. While paused, resource 39 (not yet written by the
# bulk statement) is raised to 9 by fencing_resource_advance and commits;
# resources 10 and 35 (already written) are raised too: those must wait.
# on_stale => skip: the bulk statement goes on; its rows for 39 at 5 must be
# skipped. Prints: rows written per resource class, HWMs, STALE count.
source "$(dirname "$0")/common.sh"
q <<'SQL'
DROP TABLE IF EXISTS s1 CASCADE;
DELETE FROM fencing.resource_hwm WHERE namespace = 's1'; DELETE FROM atk_log WHERE src = 's1';
CREATE TABLE s1 (id bigserial PRIMARY KEY, r int NOT NULL, tok fencing_token);
SELECT fencing_protect('s1', scope => 'resource', resource_column => 'r',
                       resource_namespace => 's1', on_stale => 'skip');
INSERT INTO s1 (r, tok) SELECT g, 5 FROM generate_series(1, 40) g;
CREATE OR REPLACE FUNCTION s1_pause(g int) RETURNS boolean VOLATILE LANGUAGE plpgsql AS
$$BEGIN IF g = 38 THEN PERFORM pg_advisory_lock(35001); PERFORM pg_advisory_unlock(35001); END IF; RETURN true; END$$;
SQL
# holder of the pause lock
psql -XAtq -c "SELECT pg_advisory_lock(35001); SELECT pg_sleep(4);" >/dev/null &
H=$!
sleep 0.5
bg bulk -c "BEGIN; INSERT INTO s1 (r, tok) SELECT ((g - 1) % 40) + 1, 5 FROM generate_series(1, 80) g WHERE s1_pause(g); SELECT pg_sleep(1); COMMIT; SELECT 'bulk committed', clock_timestamp();"
sleep 1
# raise 39 (untouched yet): commits at once
q -c "BEGIN; SELECT fencing_resource_advance('39', 9, 's1'), 'adv39', clock_timestamp(); INSERT INTO atk_log VALUES ('39', 9, 's1'); COMMIT;"
# raise 10 (share lock) and 35 (row lock), both touched: must wait for the bulk transaction
bg adv10 -c "BEGIN; SELECT fencing_resource_advance('10', 9, 's1'), 'adv10', clock_timestamp(); INSERT INTO atk_log VALUES ('10', 9, 's1'); COMMIT;"
bg adv35 -c "BEGIN; SELECT fencing_resource_advance('35', 9, 's1'), 'adv35', clock_timestamp(); INSERT INTO atk_log VALUES ('35', 9, 's1'); COMMIT;"
wait
cat /tmp/atk35_bulk.out /tmp/atk35_adv10.out /tmp/atk35_adv35.out
q <<'SQL'
SELECT 'rows r=39 tok5 after preload (must be 0):', count(*) FROM s1 WHERE r = 39 AND id > 40;
SELECT 'rows r=10 (3 expected):', count(*) FROM s1 WHERE r = 10;
SELECT 'rows total:', count(*) FROM s1;
SELECT 'hwm', resource, hwm FROM fencing.resource_hwm WHERE namespace='s1' AND resource IN ('10','39','35') ORDER BY 2;
SQL
check_order s1 r
