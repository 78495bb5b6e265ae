#!/usr/bin/env bash
# S19: the kept floor against a recreate (Alembic batch: copy into a new
# table, DROP the old, RENAME the new; the new table adopts the old one's
# state, its folded floor of 50 included), then a removed key re-inserted at
# 40 in the same migration transaction. Must be refused.
source "$(dirname "$0")/common.sh"
psql -XAtq >/tmp/atk35_s19.out 2>&1 <<'SQL'
DROP TABLE IF EXISTS rc, _alembic_tmp_rc;
CREATE TABLE rc (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('rc');
SELECT fencing_enable_retirement('rc'::regclass);
INSERT INTO rc SELECT g, 50 FROM generate_series(1, 3000) g;
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM rc WHERE id <= 2000; COMMIT;
BEGIN;
CREATE TABLE _alembic_tmp_rc (id int PRIMARY KEY, tok fencing_token, extra int);
INSERT INTO _alembic_tmp_rc (id, tok) SELECT id, tok FROM rc;
DROP TABLE rc;
ALTER TABLE _alembic_tmp_rc RENAME TO rc;
SELECT 'rc floor', floor FROM fencing.tombstone_floor WHERE relid = 'rc'::regclass;
INSERT INTO rc (id, tok) VALUES (100, 40);
COMMIT;
SELECT 'removed keys back below 50:', count(*) FROM rc WHERE id <= 2000;
INSERT INTO rc (id, tok) VALUES (101, 40);
SQL
grep -v NOTICE /tmp/atk35_s19.out | cut -c1-130
if grep -q "back below 50:|1" /tmp/atk35_s19.out; then echo "same transaction: ACCEPTED"; else echo "same transaction: refused"; fi
