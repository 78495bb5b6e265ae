#!/usr/bin/env bash
# S20: in one transaction, a bulk INSERT (floor kept), TRUNCATE of the table
# (2000 rows at 50: folded into the floor with retirement on, tombstones
# with it off), then COPY (FREEZE too) / INSERT ... SELECT of the removed keys
# at 40. Must be refused. Prints ACCEPTED for a hole.
source "$(dirname "$0")/common.sh"
for ret in on off; do for load in "COPY tc FROM PROGRAM 'seq 1 50 | sed s/\$/,40/' WITH (FORMAT csv, FREEZE)" "COPY tc FROM PROGRAM 'seq 1 50 | sed s/\$/,40/' WITH (FORMAT csv)" "INSERT INTO tc SELECT g, 40 FROM generate_series(1, 50) g"; do
psql -XAtq >/tmp/atk35_s20.out 2>&1 <<SQL
DROP TABLE IF EXISTS tc;
CREATE TABLE tc (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('tc');
SELECT CASE WHEN '$ret' = 'on' THEN fencing_enable_retirement('tc'::regclass)::text END;
INSERT INTO tc SELECT g, 50 FROM generate_series(1, 2000) g;
BEGIN;
INSERT INTO tc SELECT g, 60 FROM generate_series(5001, 5100) g;
TRUNCATE tc;
$load;
COMMIT;
SELECT 'removed keys back below 50:', count(*) FROM tc WHERE tok < 50;
SQL
if grep -q "stale fencing token" /tmp/atk35_s20.out; then r=refused; elif grep -q "below 50:|0" /tmp/atk35_s20.out; then r="not written: $(grep ERROR /tmp/atk35_s20.out | head -1 | cut -c1-90)"; else r=ACCEPTED; fi
echo "retire=$ret ${load:0:70}: $r"
done; done
