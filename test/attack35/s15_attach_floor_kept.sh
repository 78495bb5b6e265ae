#!/usr/bin/env bash
# S15: a bulk INSERT keeps the table floor it read (second read on: floor
# lock in share mode, value cached for the transaction). ATTACH of a fenced
# table whose removed keys were folded into its own floor (50) merges that
# floor into the root's. Then a re-insert of a removed key at 40:
#  a) same transaction: bulk INSERT (floor kept), ATTACH, INSERT key at 40;
#  b) other transaction: bulk INSERT open (floor kept), ATTACH commits in
#     another session, then the first inserts the key at 40 and commits.
# Both must be refused. Prints ACCEPTED for a hole.
source "$(dirname "$0")/common.sh"
setup() {
q <<'SQL' 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS af, af_t CASCADE;
CREATE TABLE af_t (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('af_t');
SELECT fencing_enable_retirement('af_t'::regclass);
INSERT INTO af_t SELECT g, 50 FROM generate_series(1, 2000) g;
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM af_t; COMMIT;
CREATE TABLE af (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE af_hi PARTITION OF af FOR VALUES FROM (10001) TO (20001);
SELECT fencing_protect('af');
SQL
q -c "SELECT '  af_t floor', floor FROM fencing.tombstone_floor WHERE relid = 'af_t'::regclass"
}
setup
psql -XAtq >/tmp/atk35_s15a.out 2>&1 <<'SQL'
BEGIN;
INSERT INTO af SELECT g, 1 FROM generate_series(10001, 10100) g;
ALTER TABLE af ATTACH PARTITION af_t FOR VALUES FROM (1) TO (10001);
SELECT '  af floor after attach', floor FROM fencing.tombstone_floor WHERE relid = 'af'::regclass;
INSERT INTO af VALUES (100, 40);
INSERT INTO af SELECT g, 40 FROM generate_series(200, 210) g;
COMMIT;
SELECT 'rows below 50 among removed keys', count(*) FROM af WHERE id <= 2000;
SQL
cat /tmp/atk35_s15a.out | cut -c1-160
if grep -q "stale fencing token" /tmp/atk35_s15a.out; then echo "a) same transaction: refused"; else echo "a) same transaction: ACCEPTED"; fi
setup
bg s15b -c "BEGIN; INSERT INTO af SELECT g, 1 FROM generate_series(10001, 10100) g; SELECT pg_sleep(1.5); INSERT INTO af SELECT g, 40 FROM generate_series(300, 310) g; COMMIT; SELECT 'rows below 50 among removed keys', count(*) FROM af WHERE id <= 2000;"
sleep 0.5
q -c "ALTER TABLE af ATTACH PARTITION af_t FOR VALUES FROM (1) TO (10001)" 2>&1 | grep -v NOTICE
q -c "SELECT '  af floor after attach', floor FROM fencing.tombstone_floor WHERE relid = 'af'::regclass"
wait
cut -c1-160 /tmp/atk35_s15b.out
if grep -q "stale fencing token" /tmp/atk35_s15b.out; then echo "b) other transaction: refused"; else echo "b) other transaction: ACCEPTED"; fi
