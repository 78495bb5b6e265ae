#!/usr/bin/env bash
# S5: row scope. A DELETE of 2000 rows at token 20 (folded into the floor
# with retirement on; set-based tombstones with it off) stays open while a
# re-insert of a deleted key at 15 (single row, INSERT ... SELECT of many
# keys, COPY, INSERT ... ON CONFLICT DO UPDATE) waits on the primary key; the
# DELETE commits; the re-insert must be refused. Also the other order: the
# re-insert (fresh key range + one deleted key) first, open, then the DELETE.
# Prints each outcome (ACCEPTED = hole) and the commit-order count.
source "$(dirname "$0")/common.sh"
race() {  # retirement on|off, writer sql
q <<SQL 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS s5;
DELETE FROM atk_log WHERE src = 's5';
CREATE TABLE s5 (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('s5');
SELECT CASE WHEN '$1' = 'on' THEN fencing_enable_retirement('s5'::regclass)::text END;
INSERT INTO s5 SELECT g, 10 FROM generate_series(1, 2000) g;
SQL
bg s5d -c "BEGIN; SET LOCAL fencing.token = 20; DELETE FROM s5 WHERE id <= 2000; INSERT INTO atk_log SELECT g::text, 20, 's5' FROM generate_series(1, 2000) g; SELECT pg_sleep(1.5); COMMIT;"
sleep 0.7
local out; out=$(psql -XAtq -c "$2" 2>&1 | grep -v NOTICE | head -1 | cut -c1-110)
wait
if echo "$out" | grep -q ERROR; then r=refused; else r=ACCEPTED; fi
echo "retire=$1 | ${2:0:60} | $r: $out"
q -c "SELECT '  floor', (SELECT floor FROM fencing.tombstone_floor WHERE relid='s5'::regclass), 'tombstones', count(*) FROM fencing.row_tombstone WHERE relid='s5'::regclass"
check_order s5 id
}
for ret in on off; do
race $ret "INSERT INTO s5 VALUES (1500, 15)"
race $ret "INSERT INTO s5 SELECT g, 15 FROM generate_series(5000, 5100) g UNION ALL SELECT 1500, 15"
race $ret "COPY s5 FROM PROGRAM 'seq 1490 1510 | sed s/\$/,15/' WITH (FORMAT csv)"
race $ret "INSERT INTO s5 VALUES (1500, 15) ON CONFLICT (id) DO UPDATE SET tok = 15"
race $ret "INSERT INTO s5 SELECT id + 0, 15 FROM s5 WHERE id BETWEEN 1 AND 3 ON CONFLICT (id) DO UPDATE SET tok = 15"
done
