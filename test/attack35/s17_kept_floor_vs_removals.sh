#!/usr/bin/env bash
# S17: a bulk writer keeps the root's floor (bulk INSERT into partition p2)
# while another session removes 2000 rows (tokens 50) of partition p1 with a
# lock that does not conflict with the writer: TRUNCATE p1, DELETE FROM p1,
# DELETE through the root, fencing_retire (waits by design). Then the writer
# re-inserts a removed key at 40 and commits. Must be refused. Retirement on.
source "$(dirname "$0")/common.sh"
for rm in "TRUNCATE kf_p1" "BEGIN; SET LOCAL fencing.token = 50; DELETE FROM kf_p1; COMMIT;" "BEGIN; SET LOCAL fencing.token = 50; DELETE FROM kf WHERE id <= 10000; COMMIT;"; do
q <<'SQL' 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS kf CASCADE;
CREATE TABLE kf (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE kf_p1 PARTITION OF kf FOR VALUES FROM (1) TO (10001);
CREATE TABLE kf_p2 PARTITION OF kf FOR VALUES FROM (10001) TO (20001);
SELECT fencing_protect('kf');
SELECT fencing_enable_retirement('kf'::regclass);
INSERT INTO kf SELECT g, 50 FROM generate_series(1, 2000) g;
SQL
bg s17 -c "BEGIN; INSERT INTO kf SELECT g, 1 FROM generate_series(10001, 10100) g; SELECT pg_sleep(1.5); INSERT INTO kf VALUES (100, 40); COMMIT; SELECT 'removed keys back below 50:', count(*) FROM kf WHERE id <= 2000;"
sleep 0.5
timeout 5 psql -XAtq -c "SET lock_timeout = '3s'" -c "$rm" 2>&1 | grep -v NOTICE | head -2
q -c "SELECT '  floor', floor, 'tombstones', (SELECT count(*) FROM fencing.row_tombstone WHERE relid='kf'::regclass) FROM fencing.tombstone_floor WHERE relid='kf'::regclass"
wait
cut -c1-120 /tmp/atk35_s17.out
if grep -q "stale fencing token" /tmp/atk35_s17.out; then echo "== $rm: refused"; else echo "== $rm: ACCEPTED"; fi
done
