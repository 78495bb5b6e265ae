#!/usr/bin/env bash
# S4: row scope, partitioned, retirement on. Each removal (DROP partition,
# DETACH, DETACH CONCURRENTLY, TRUNCATE of a leaf, TRUNCATE ... CASCADE of a
# fenced FK child) of >1000 rows at tokens 10..; then a re-insert of a removed
# key at 50 (below the removed token) must be refused; ATTACH of a table
# holding a removed key below the floor must be refused too. Prints each
# outcome (ACCEPTED = hole) and the floor.
source "$(dirname "$0")/common.sh"
setup() {
q <<'SQL' 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS s4, s4_child, s4_parent, s4_det, s4_att CASCADE;
CREATE TABLE s4 (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE s4_p1 PARTITION OF s4 FOR VALUES FROM (1) TO (5001);
CREATE TABLE s4_p2 PARTITION OF s4 FOR VALUES FROM (5001) TO (10001);
CREATE TABLE s4_def PARTITION OF s4 DEFAULT;
SELECT fencing_protect('s4');
SELECT fencing_enable_retirement('s4'::regclass);
INSERT INTO s4 SELECT g, 2000 + g FROM generate_series(1, 3000) g;
INSERT INTO s4 SELECT g, 2000 + g FROM generate_series(5001, 8000) g;
SQL
}
try() {  # label, sql
  local out; out=$(psql -XAtq -c "$2" 2>&1 | grep -v NOTICE | head -1 | cut -c1-150)
  if echo "$out" | grep -q ERROR; then echo "$1: refused: $out"; else echo "$1: ACCEPTED: $out"; fi
}
floor() { q -c "SELECT '  floor', floor, 'tombstones', (SELECT count(*) FROM fencing.row_tombstone WHERE relid='s4'::regclass) FROM fencing.tombstone_floor WHERE relid='s4'::regclass"; }
setup
q -c "DROP TABLE s4_p1"; floor
try "after DROP p1, re-insert 100@50 (default part)" "INSERT INTO s4 VALUES (100, 50)"
try "after DROP p1, COPY-like bulk 90..110@50" "INSERT INTO s4 SELECT g, 50 FROM generate_series(90,110) g"
q -c "ALTER TABLE s4 DETACH PARTITION s4_p2 CONCURRENTLY" 2>&1 | grep -v NOTICE | head -1
q -c "ALTER TABLE s4 DETACH PARTITION s4_p2" 2>&1 | grep -v NOTICE; floor
q -c "ALTER TABLE s4_p2 RENAME TO s4_det"
try "after DETACH p2, re-insert 6000@50" "INSERT INTO s4 VALUES (6000, 50)"
q -c "CREATE TABLE s4_att (id int PRIMARY KEY, tok fencing_token); INSERT INTO s4_att VALUES (7000, 50);" 2>&1 | grep -v NOTICE
try "ATTACH table holding removed key 7000@50" "ALTER TABLE s4 DETACH PARTITION s4_def; ALTER TABLE s4 ATTACH PARTITION s4_att FOR VALUES FROM (5001) TO (10001)"
try "ATTACH detached p2 back (its own rows at their tokens)" "ALTER TABLE s4 ATTACH PARTITION s4_det FOR VALUES FROM (10001) TO (20001)"
setup
q -c "TRUNCATE s4_p1" 2>&1 | grep -v NOTICE; floor
try "after TRUNCATE leaf p1, re-insert 100@50" "INSERT INTO s4 VALUES (100, 50)"
q -c "SET fencing.token = 20000; DELETE FROM s4 WHERE id > 5000" 2>&1 | grep -v NOTICE; floor
try "after bulk DELETE at 20000, re-insert 6000@19999" "INSERT INTO s4 VALUES (6000, 19999)"
try "after bulk DELETE, COPY 6000..6010@19999" "COPY s4 FROM PROGRAM 'seq 6000 6010 | sed s/\$/,19999/' WITH (FORMAT csv)"
# TRUNCATE CASCADE to a fenced FK child
q <<'SQL' 2>&1 | grep -v NOTICE
CREATE TABLE s4_parent (id int PRIMARY KEY);
CREATE TABLE s4_child (id int PRIMARY KEY, pid int REFERENCES s4_parent, tok fencing_token);
SELECT fencing_protect('s4_child');
SELECT fencing_enable_retirement('s4_child'::regclass);
INSERT INTO s4_parent SELECT g FROM generate_series(1, 2000) g;
INSERT INTO s4_child SELECT g, g, 100 + g FROM generate_series(1, 2000) g;
TRUNCATE s4_parent CASCADE;
INSERT INTO s4_parent VALUES (1);
SQL
q -c "SELECT '  child floor', floor, (SELECT count(*) FROM fencing.row_tombstone WHERE relid='s4_child'::regclass) FROM fencing.tombstone_floor WHERE relid='s4_child'::regclass"
try "after TRUNCATE CASCADE, child re-insert 1@50" "INSERT INTO s4_child VALUES (1, 1, 50)"
