#!/usr/bin/env bash
# S12: the key-fits memo and binary tombstone keys across ALTER TABLE ...
# ALTER COLUMN TYPE of the primary key in one session: COPY (memo set),
# DELETE (tombstones / folded floor), ALTER TYPE (int -> bigint, -> numeric,
# -> text, smallint), then COPY / INSERT re-inserting deleted keys below
# their tombstone in the same session. Prints ACCEPTED for a hole.
source "$(dirname "$0")/common.sh"
for ret in off on; do
for ty in bigint text numeric smallint "varchar(3)" uuid; do
out=$(psql -XAtq 2>&1 <<SQL | grep -v NOTICE | grep -E "ERROR|ACCEPTED" | head -2 | cut -c1-130 | tr '\n' ' '
DROP TABLE IF EXISTS at1;
CREATE TABLE at1 (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('at1');
SELECT CASE WHEN '$ret' = 'on' THEN fencing_enable_retirement('at1'::regclass)::text END;
COPY at1 FROM PROGRAM 'seq 1 2000 | sed s/\$/,10/' WITH (FORMAT csv);
BEGIN; SET LOCAL fencing.token = 10; DELETE FROM at1 WHERE id <= 1500; COMMIT;
ALTER TABLE at1 ALTER COLUMN id TYPE $ty USING (CASE WHEN '$ty' = 'uuid' THEN NULL ELSE id::text END)::$ty;
COPY at1 FROM PROGRAM 'seq 5 7 | sed s/\$/,5/' WITH (FORMAT csv);
SELECT 'ACCEPTED COPY', count(*) FROM at1 WHERE tok < 10;
INSERT INTO at1 VALUES ('8', 5);
SELECT 'ACCEPTED INSERT', count(*) FROM at1 WHERE tok < 10;
SQL
)
echo "retire=$ret int -> $ty: $out"
done; done
