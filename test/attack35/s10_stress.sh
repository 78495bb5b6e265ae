#!/usr/bin/env bash
# S10/S11: commit-order stress with pgbench (tokens from a sequence, so
# transactions commit out of token order). s10: resource scope, 60 resources
# (past the 32 share locks), bulk INSERT ... SELECT of 100 rows per
# transaction, 10% stale rows scattered, a savepoint holding older tokens
# rolled back 1 in 4, on_stale skip; against single-row raisers
# (fencing_resource_advance, logged in atk_log). s11: row scope, 3000 keys,
# retirement on; bulk upserts (10% stale) racing DELETEs of 1500 keys (folded
# into the floor), each delete logged per key at its token. Prints pgbench's
# summary and the commit-order check: "stale accepted" must be 0.
source "$(dirname "$0")/common.sh"
D=${DURATION:-15}
q <<'SQL' 2>&1 | grep -v NOTICE
DROP TABLE IF EXISTS s10, s11; DROP SEQUENCE IF EXISTS s10_tok, s11_tok;
DELETE FROM fencing.resource_hwm WHERE namespace = 's10';
DELETE FROM atk_log WHERE src IN ('s10', 's11');
CREATE SEQUENCE s10_tok START 100; CREATE SEQUENCE s11_tok START 100;
CREATE TABLE s10 (id bigserial PRIMARY KEY, r int NOT NULL, tok fencing_token);
SELECT fencing_protect('s10', scope => 'resource', resource_column => 'r', resource_namespace => 's10', on_stale => 'skip');
INSERT INTO s10 (r, tok) SELECT g, 1 FROM generate_series(1, 60) g;
CREATE TABLE s11 (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('s11', on_stale => 'skip');
SELECT fencing_enable_retirement('s11'::regclass);
INSERT INTO s11 SELECT g, 1 FROM generate_series(1, 3000) g;
SQL
dir=test/attack35
pgbench -n -c 3 -T $D --max-tries=20 -f $dir/s10_bulk.pgb >/tmp/atk35_s10a.out 2>&1 &
pgbench -n -c 2 -T $D --max-tries=20 -f $dir/s10_raise.pgb >/tmp/atk35_s10b.out 2>&1 &
pgbench -n -c 3 -T $D --max-tries=20 -f $dir/s11_rows.pgb >/tmp/atk35_s11.out 2>&1 &
wait
for f in s10a s10b s11; do echo "$f: $(grep -E 'number of (transactions actually processed|failed|transactions retried)' /tmp/atk35_$f.out | tr '\n' ' ')"; grep -i "error\|abort" /tmp/atk35_$f.out | sort | uniq -c | head -3; done
check_order s10 r
check_order s11 id
q -c "SELECT 's11 floor', floor, 'tombstones', (SELECT count(*) FROM fencing.row_tombstone WHERE relid='s11'::regclass) FROM fencing.tombstone_floor WHERE relid='s11'::regclass"
grep -c "TRAP\|server process .* was terminated\|XX000\|PANIC" /tmp/fencing-cluster-$FENCING_PGPORT/server.log
