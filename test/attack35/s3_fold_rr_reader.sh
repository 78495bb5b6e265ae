#!/usr/bin/env bash
# S3: row scope, retirement on: a DELETE of 2000 rows (over the 1000 fold
# threshold) at token 20 folds into the floor. A REPEATABLE READ (then a
# SERIALIZABLE, then a READ COMMITTED) transaction whose snapshot predates the
# fold re-inserts a deleted key at 15, single-row and as a bulk INSERT ...
# SELECT / COPY. Each must be refused (TF001 or 40001). Prints each outcome
# and the stale count in commit order.
source "$(dirname "$0")/common.sh"
run() {  # $1 isolation level, $2 statement kind
q <<SQL 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS s3;
DELETE FROM atk_log WHERE src = 's3';
CREATE TABLE s3 (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('s3');
SELECT fencing_enable_retirement('s3'::regclass);
INSERT INTO s3 SELECT g, 10 FROM generate_series(1, 2000) g;
SQL
psql -XAtq -v ON_ERROR_STOP=1 >/tmp/atk35_s3w.out 2>&1 <<SQL &
BEGIN ISOLATION LEVEL $1;
SELECT count(*) FROM s3;          -- snapshot taken before the fold
SELECT pg_sleep(1.5);
$2
COMMIT;
SQL
sleep 0.5
q -c "BEGIN; SET LOCAL fencing.token = 20; DELETE FROM s3; INSERT INTO atk_log SELECT g::text, 20, 's3' FROM generate_series(1, 2000) g; COMMIT;"
wait
echo "== $1 / ${2:0:40}: $(tr '\n' ' ' </tmp/atk35_s3w.out | cut -c1-220)"
q -c "SELECT 'floor', floor, 'tombstones', (SELECT count(*) FROM fencing.row_tombstone WHERE relid = 's3'::regclass), 'rows', (SELECT count(*) FROM s3) FROM fencing.tombstone_floor WHERE relid = 's3'::regclass"
check_order s3 id
}
for lvl in "REPEATABLE READ" SERIALIZABLE "READ COMMITTED"; do
  run "$lvl" "INSERT INTO s3 VALUES (5, 15);"
  run "$lvl" "INSERT INTO s3 SELECT g, 15 FROM generate_series(1, 50) g;"
  run "$lvl" "INSERT INTO s3 SELECT g, 15 FROM generate_series(3001, 3050) g UNION ALL SELECT 7, 15;"
done
