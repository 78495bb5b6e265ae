#!/usr/bin/env bash
# S14: resource identities around the memo's 64-byte and the stack's 128-byte
# bounds (namespace + NUL + resource of 60..70 and 120..130 bytes, and 2000
# bytes), 40 resources per statement (past the share locks), each written
# three times at the HWM and once below it (scattered), on_stale skip and
# error. Prints rows written below the HWM (must be 0) and errors (no XX000).
source "$(dirname "$0")/common.sh"
q <<'SQL' 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS lr, lr2;
DELETE FROM fencing.resource_hwm WHERE namespace IN ('lr', 'lr2');
CREATE TABLE lr (id bigserial PRIMARY KEY, r text NOT NULL, tok fencing_token);
SELECT fencing_protect('lr', scope => 'resource', resource_column => 'r', resource_namespace => 'lr', on_stale => 'skip');
CREATE TABLE lr2 (id bigserial PRIMARY KEY, r text NOT NULL, tok fencing_token);
SELECT fencing_protect('lr2', scope => 'resource', resource_column => 'r', resource_namespace => 'lr2');
DROP TABLE IF EXISTS names; CREATE TABLE names AS SELECT n, repeat('r', len - 3 - length(n::text)) || n AS r
  FROM generate_series(1, 40) n, (VALUES (60), (61), (62), (63), (64), (65), (66), (124), (125), (126), (127), (128), (129), (2000)) l(len);
INSERT INTO lr (r, tok) SELECT r, 10 FROM names;
INSERT INTO lr2 (r, tok) SELECT r, 10 FROM names;
INSERT INTO lr (r, tok) SELECT r, CASE WHEN k = 3 THEN 9 ELSE 10 END FROM names, generate_series(1, 4) k ORDER BY k, random();
SELECT 'lr rows below HWM (must be 0):', count(*) FROM lr WHERE tok < 10;
SELECT 'lr rows at HWM (must be 2240):', count(*) FROM lr WHERE tok = 10;
SQL
psql -XAtq -c "INSERT INTO lr2 (r, tok) SELECT r, CASE WHEN k = 3 AND length(r) > 1000 AND n = 33 THEN 9 ELSE 10 END FROM names, generate_series(1, 4) k ORDER BY k" 2>&1 | head -1 | cut -c1-100
q -c "SELECT 'lr2 rows below HWM (must be 0):', count(*) FROM lr2 WHERE tok < 10"
