#!/usr/bin/env bash
# S18: the kept floor against fencing_transfer_state in the same transaction
# (pg-osc's swap after its copy): the copy (INSERT ... SELECT into the new
# table) keeps the new table's floor (0); fencing_transfer_state moves the
# old table's floor (50, a folded DELETE of 2000 keys) to it; a removed key
# re-inserted at 40 in that transaction must be refused.
source "$(dirname "$0")/common.sh"
psql -XAtq >/tmp/atk35_s18.out 2>&1 <<'SQL'
DROP TABLE IF EXISTS tso, tsn;
CREATE TABLE tso (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('tso');
SELECT fencing_enable_retirement('tso'::regclass);
INSERT INTO tso SELECT g, 50 FROM generate_series(1, 3000) g;
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM tso WHERE id <= 2000; COMMIT;
CREATE TABLE tsn (id int PRIMARY KEY, tok fencing_token);
BEGIN;
INSERT INTO tsn SELECT id, tok FROM tso;
SELECT fencing_transfer_state('tso', 'tsn');
SELECT 'tsn floor', floor FROM fencing.tombstone_floor WHERE relid = 'tsn'::regclass;
INSERT INTO tsn VALUES (100, 40);
COMMIT;
SELECT 'removed keys back below 50:', count(*) FROM tsn WHERE id <= 2000;
INSERT INTO tsn VALUES (101, 40);
SQL
grep -v NOTICE /tmp/atk35_s18.out | cut -c1-130
if grep -q "back below 50:|1" /tmp/atk35_s18.out; then echo "same transaction: ACCEPTED"; else echo "same transaction: refused"; fi
