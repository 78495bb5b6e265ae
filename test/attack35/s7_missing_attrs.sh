#!/usr/bin/env bash
# S7: columns read from the firing's slot / by cached offset, on rows stored
# before ALTER TABLE ADD COLUMN ... DEFAULT (the value is "missing" from the
# stored tuple, atthasmissing) and with dropped columns before the token.
# Each stale statement must be refused; prints ACCEPTED for a hole.
source "$(dirname "$0")/common.sh"
try() { local out; out=$(psql -XAtq -c "$2" 2>&1 | grep -v NOTICE | head -1 | cut -c1-120)
  if echo "$out" | grep -q ERROR; then echo "$1: refused: $out"; else echo "$1: ACCEPTED: $out"; fi; }
q <<'SQL' 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS m1, m2, m3;
CREATE TABLE m1 (id int PRIMARY KEY, junk int, v int);
INSERT INTO m1 SELECT g, g, g FROM generate_series(1, 3000) g;
ALTER TABLE m1 DROP COLUMN junk;
ALTER TABLE m1 ADD COLUMN tok fencing_token NOT NULL DEFAULT 7;
SELECT fencing_protect('m1');
CREATE TABLE m2 (id int PRIMARY KEY, a int, b bigint);
INSERT INTO m2 SELECT g, g, g FROM generate_series(1, 3000) g;
ALTER TABLE m2 ADD COLUMN r int NOT NULL DEFAULT 3;
ALTER TABLE m2 ADD COLUMN tok fencing_token NOT NULL DEFAULT 7;
SELECT fencing_protect('m2', scope => 'resource', resource_column => 'r', resource_namespace => 'm2');
SQL
q -c "DELETE FROM fencing.resource_hwm WHERE namespace='m2'"
try "row: UPDATE old (missing tok=7) rows to tok 6 (bulk)" "UPDATE m1 SET tok = 6, v = v + 1"
try "row: UPDATE one old row tok 6" "UPDATE m1 SET tok = 6 WHERE id = 5"
try "row: DELETE old rows at token 6 (below 7)" "SET fencing.token = 6; DELETE FROM m1 WHERE id <= 2000"
q -c "SET fencing.token = 7; DELETE FROM m1 WHERE id <= 2000" 2>&1 | grep -v NOTICE
try "row: re-insert deleted key at 6 (tombstone 7)" "INSERT INTO m1 (id, v, tok) VALUES (5, 0, 6)"
try "row: COPY re-insert deleted keys at 6" "COPY m1 (id, v, tok) FROM PROGRAM 'seq 1 50 | sed s/\$/,0,6/' WITH (FORMAT csv)"
q -c "INSERT INTO m2 (id, a, b, r, tok) VALUES (99999, 0, 0, 3, 7)" 2>&1 | grep -v NOTICE
try "resource: UPDATE old rows (missing r=3) at 6" "UPDATE m2 SET tok = 6 WHERE id <= 2000"
try "resource: COPY r=3 at 6" "COPY m2 (id, a, b, r, tok) FROM PROGRAM 'seq 5001 5100 | sed s/\$/,0,0,3,6/' WITH (FORMAT csv)"
try "resource: COPY columns reordered (tok before r) r=3 at 6" "COPY m2 (tok, r, id) FROM PROGRAM 'seq 6001 6100 | sed s/^/6,3,/' WITH (FORMAT csv)"
q -c "SELECT 'm2 hwm', resource, hwm FROM fencing.resource_hwm WHERE namespace='m2'"
