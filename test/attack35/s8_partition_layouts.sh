#!/usr/bin/env bash
# S8: a partitioned fenced table whose leaves store the token / resource /
# key columns at different positions (a dropped column before them in one
# leaf, an attached table with another column order). COPY and
# INSERT ... SELECT alternate between the leaves (resource, row and table
# scope) with stale rows scattered; all must be refused (on_stale error) and
# the skip variant must skip exactly the stale rows. Prints ACCEPTED for a hole.
source "$(dirname "$0")/common.sh"
try() { local out; out=$(psql -XAtq -c "$2" 2>&1 | grep -v NOTICE | head -1 | cut -c1-120)
  if echo "$out" | grep -q "stale fencing token"; then echo "$1: refused: $out"; else echo "$1: ACCEPTED: $out"; fi; }
for scope in resource row table; do
q <<SQL 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS pl CASCADE;
DELETE FROM fencing.resource_hwm WHERE namespace = 'pl';
CREATE TABLE pl (id int, r int NOT NULL, pad text, tok fencing_token, PRIMARY KEY (id)) PARTITION BY HASH (id);
CREATE TABLE pl0 PARTITION OF pl FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE pl1 (junk1 bigint, junk2 text, id int, r int NOT NULL, pad text, tok fencing_token, PRIMARY KEY (id));
ALTER TABLE pl1 DROP COLUMN junk1; ALTER TABLE pl1 DROP COLUMN junk2;
ALTER TABLE pl ATTACH PARTITION pl1 FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE pl2 (tok fencing_token, pad text, r int NOT NULL, id int PRIMARY KEY);
ALTER TABLE pl ATTACH PARTITION pl2 FOR VALUES WITH (MODULUS 3, REMAINDER 2);
SELECT CASE '$scope' WHEN 'resource' THEN fencing_protect('pl', scope => 'resource', resource_column => 'r', resource_namespace => 'pl')::text
                     WHEN 'row' THEN fencing_protect('pl')::text ELSE fencing_protect('pl', scope => 'table')::text END;
-- HWM 10 everywhere: resource r (1..60) at 10, each key at 10, the table at 10
INSERT INTO pl SELECT g, g % 60 + 1, repeat('x', g % 7), 10 FROM generate_series(1, 600) g;
SQL
# stale (9) rows on keys 1..600 (row), resources (resource) or anything (table), scattered among fresh (10/11) ones
fresh=""
# row scope: keys 1..300 deleted at 10 (tombstones), so 9 is stale for them
[ $scope = row ] && q -c "SET fencing.token = 10; DELETE FROM pl WHERE id <= 300" 2>&1 | grep -v NOTICE
off=0; [ $scope = row ] || off=1000
for k in 250 251 252 253; do
leaf=$(q -c "SELECT tableoid::regclass FROM pl WHERE id = $k + 300")
try "$scope: INSERT..SELECT, stale key $k ($leaf) among 300" "INSERT INTO pl SELECT g + $off, g % 60 + 1, 'y', CASE WHEN g = $k THEN 9 ELSE 11 END FROM generate_series(1, 300) g $fresh"
try "$scope: COPY, stale key $k ($leaf)" "COPY pl (id, r, pad, tok) FROM PROGRAM 'seq 1 300 | awk -v off=$off \"{print \\\$1+off\\\",\\\"(\\\$1%60+1)\\\",z,\\\"(\\\$1==$k?9:11)}\"' WITH (FORMAT csv)"
try "$scope: COPY (tok first), stale key $k ($leaf)" "COPY pl (tok, id, r) FROM PROGRAM 'seq 1 300 | awk -v off=$off \"{print (\\\$1==$k?9:11)\\\",\\\"\\\$1+off\\\",\\\"(\\\$1%60+1)}\"' WITH (FORMAT csv)"
done
done
