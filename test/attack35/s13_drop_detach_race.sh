#!/usr/bin/env bash
# S13: DROP / DETACH / TRUNCATE of a row-scope partition (2000 rows, tokens
# 10..) racing writers, retirement on (fold) and off (tombstones):
#  a) the removal open first, a writer re-inserting a removed key at 5 (into
#     the root: routed to the default partition once the removal commits);
#  b) a writer's bulk insert (new keys at 3000) open first, the removal
#     waits for it; then a re-insert of one of the writer's keys at 2999.
# Each re-insert must be refused. Prints ACCEPTED for a hole.
source "$(dirname "$0")/common.sh"
setup() {
q <<SQL 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS dr, dr_p1 CASCADE;
CREATE TABLE dr (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE dr_p1 PARTITION OF dr FOR VALUES FROM (1) TO (10001);
CREATE TABLE dr_def PARTITION OF dr DEFAULT;
SELECT fencing_protect('dr');
SELECT CASE WHEN '$1' = 'on' THEN fencing_enable_retirement('dr'::regclass)::text END;
INSERT INTO dr SELECT g, 10 + g FROM generate_series(1, 2000) g;
SQL
}
verdict() { if grep -q "stale fencing token" "$2"; then echo "$1: refused"; else echo "$1: ACCEPTED: $(grep -v NOTICE $2 | head -2 | tr '\n' ' ' | cut -c1-150)"; fi; }
for ret in on off; do
for rm in "DROP TABLE dr_p1" "ALTER TABLE dr DETACH PARTITION dr_p1" "TRUNCATE dr_p1"; do
  setup $ret
  bg rm -c "BEGIN; $rm; SELECT pg_sleep(1); COMMIT;"
  sleep 0.4
  psql -XAtq -c "INSERT INTO dr VALUES (1500, 5)" >/tmp/atk35_w.out 2>&1
  wait
  verdict "retire=$ret a) $rm open, re-insert 1500@5" /tmp/atk35_w.out
  setup $ret
  bg w -c "BEGIN; INSERT INTO dr SELECT g, 3000 FROM generate_series(2001, 3500) g; SELECT pg_sleep(1); COMMIT;"
  sleep 0.4
  q -c "$rm" 2>&1 | grep -v NOTICE
  wait
  q -c "SELECT '  floor', (SELECT floor FROM fencing.tombstone_floor WHERE relid='dr'::regclass), 'tombstones', count(*) FROM fencing.row_tombstone WHERE relid='dr'::regclass"
  psql -XAtq -c "INSERT INTO dr VALUES (3400, 2999)" >/tmp/atk35_w2.out 2>&1
  verdict "retire=$ret b) writer open, then $rm, re-insert 3400@2999" /tmp/atk35_w2.out
done; done
