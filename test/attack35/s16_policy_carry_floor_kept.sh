#!/usr/bin/env bash
# S16: the same kept floor, raised by a policy change in the same
# transaction: row scope bulk INSERT (floor kept, 0), fencing_protect to
# table scope, a table-scope write at 50 (every row raised to 50), fencing_protect back to row scope
# (the table HWM 50 carried into the floor: "every key judged at least at
# 50"), then a new key at 40. Must be refused. Prints ACCEPTED for a hole.
source "$(dirname "$0")/common.sh"
psql -XAtq >/tmp/atk35_s16.out 2>&1 <<'SQL'
DROP TABLE IF EXISTS pc;
CREATE TABLE pc (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('pc');
BEGIN;
INSERT INTO pc SELECT g, 1 FROM generate_series(1, 100) g;
SELECT fencing_protect('pc', scope => 'table');
INSERT INTO pc VALUES (1000, 50);
UPDATE pc SET tok = 50;
SELECT fencing_protect('pc', scope => 'row');
SELECT 'floor now', floor FROM fencing.tombstone_floor WHERE relid = 'pc'::regclass;
INSERT INTO pc VALUES (2000, 40);
COMMIT;
SELECT 'rows at 40', count(*) FROM pc WHERE tok = 40;
-- control: a fresh transaction
INSERT INTO pc VALUES (3000, 40);
SQL
grep -v NOTICE /tmp/atk35_s16.out | cut -c1-150
if grep -q "rows at 40|1" /tmp/atk35_s16.out; then echo "same transaction: ACCEPTED"; else echo "same transaction: refused"; fi
