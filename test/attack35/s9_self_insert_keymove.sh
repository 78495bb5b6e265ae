#!/usr/bin/env bash
# S9: INSERT ... SELECT from the fenced table into itself. Resource scope,
# 100 resources, each with rows at tokens 5..10 (HWM 10), on_stale skip: the
# copy must keep only the rows at 10. Row scope: every key takes its
# neighbour's token (ON CONFLICT DO UPDATE; half are lower): every lower one
# must be refused (skip) and no key's token may drop. Bulk UPDATE moving keys
# (id + 100000) with retirement on (2000 rows: fold) and off, then a
# re-insert of an old key below its token. Prints counts; a nonzero
# "lowered"/"stale" or ACCEPTED is a hole.
source "$(dirname "$0")/common.sh"
try() { local out; out=$(psql -XAtq -c "$2" 2>&1 | grep -v NOTICE | head -1 | cut -c1-120)
  if echo "$out" | grep -q "stale fencing token"; then echo "$1: refused: $out"; else echo "$1: ACCEPTED: $out"; fi; }
q <<'SQL' 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS si, sr, sk;
DELETE FROM fencing.resource_hwm WHERE namespace = 'si';
CREATE TABLE si (id bigserial PRIMARY KEY, r int NOT NULL, tok fencing_token);
SELECT fencing_protect('si', scope => 'resource', resource_column => 'r', resource_namespace => 'si', on_stale => 'skip');
INSERT INTO si (r, tok) SELECT r, t FROM generate_series(1, 100) r, generate_series(5, 10) t ORDER BY t, r;
INSERT INTO si (r, tok) SELECT r, tok FROM si ORDER BY random();
SELECT 'resource self-copy: rows below 10 written (must be 0):', count(*) FROM si WHERE id > 600 AND tok < 10;
SELECT 'resource self-copy: rows at 10 written (must be 100):', count(*) FROM si WHERE id > 600 AND tok = 10;
CREATE TABLE sr (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('sr', on_stale => 'skip');
INSERT INTO sr SELECT g, (g * 7919) % 1000 + 1 FROM generate_series(1, 1000) g;
CREATE TEMP TABLE before AS SELECT id, tok::text::bigint AS tok FROM sr;
INSERT INTO sr SELECT id % 1000 + 1, tok FROM sr ON CONFLICT (id) DO UPDATE SET tok = excluded.tok;
SELECT 'row self-upsert: keys lowered (must be 0):', count(*) FROM sr JOIN before b USING (id) WHERE sr.tok::text::bigint < b.tok;
SELECT 'row self-upsert: keys raised:', count(*) FROM sr JOIN before b USING (id) WHERE sr.tok::text::bigint > b.tok;
SQL
for ret in on off; do
q <<SQL 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS sk;
CREATE TABLE sk (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('sk');
SELECT CASE WHEN '$ret' = 'on' THEN fencing_enable_retirement('sk'::regclass)::text END;
INSERT INTO sk SELECT g, 10 FROM generate_series(1, 2000) g;
UPDATE sk SET id = id + 100000, tok = 20;
SELECT 'key move retire=$ret: floor', (SELECT floor FROM fencing.tombstone_floor WHERE relid='sk'::regclass), 'tombstones', count(*) FROM fencing.row_tombstone WHERE relid='sk'::regclass;
SQL
try "retire=$ret: re-insert moved-away key 5 at 9 (row was at 10)" "INSERT INTO sk VALUES (5, 9)"
try "retire=$ret: bulk re-insert moved-away keys 1..100 at 9" "INSERT INTO sk SELECT g, 9 FROM generate_series(1, 100) g"
try "retire=$ret: move back 100005 -> 5 at 9" "UPDATE sk SET id = 5, tok = 9 WHERE id = 100005"
done
