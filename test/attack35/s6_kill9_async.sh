#!/usr/bin/env bash
# S6: synchronous_commit = off, wal_writer_delay = 10 s (an acknowledged
# async commit stays unflushed for a while). Each case runs one acknowledged
# bulk statement, then kill -9 of the postmaster and all its children at
# once, restart (crash recovery), and checks the acknowledged HWM / floor /
# tombstones / rows survived, then that a stale write (below the
# acknowledged token) is refused. Prints LOST / STALE ACCEPTED for holes.
source "$(dirname "$0")/common.sh"
DATA=/tmp/fencing-cluster-$FENCING_PGPORT/data
grep -q "^wal_writer_delay = 10000" $DATA/postgresql.conf || {
  echo "wal_writer_delay = 10000" >> $DATA/postgresql.conf
  echo "synchronous_commit = off" >> $DATA/postgresql.conf
  runuser -u postgres -- pg_ctl -D $DATA -w restart -m fast >/dev/null; }
crash() {
  local pm; pm=$(head -1 $DATA/postmaster.pid)
  kill -9 $pm $(ps --ppid $pm -o pid=) 2>/dev/null; sleep 1
  rm -f $DATA/postmaster.pid /tmp/fencing-cluster-$FENCING_PGPORT/sock/.s.PGSQL.*
  runuser -u postgres -- pg_ctl -D $DATA -l /tmp/fencing-cluster-$FENCING_PGPORT/server.log -w start >/dev/null
  for i in $(seq 1 30); do pg_isready -q && break; sleep 0.5; done
}
case_() {  # label, setup sql, acknowledged statement, check sql (prints 't' when kept), stale sql
  # the DROP in its own transaction: a fenced table dropped and created
  # again in one transaction adopts the old state (a recreate)
  q -c "${2%%;*}" >/dev/null 2>&1; q -c "${2#*;}" >/dev/null 2>&1
  q -c "CHECKPOINT"
  if ! q -c "$3" >/dev/null 2>/tmp/atk35_s6.err; then echo "$1: statement failed: $(head -1 /tmp/atk35_s6.err)"; return; fi
  crash
  local kept; kept=$(q -c "$4" 2>&1)
  local st; st=$(psql -XAtq -c "$5" 2>&1 | grep -c ERROR)
  echo "$1: kept=$kept (LOST if f) stale_refused=$st (STALE ACCEPTED if 0)"
}
# Control: an unfenced table's async commit is lost (kept=f shows the crash
# loses what was not flushed; stale_refused is meaningless there).
case_ "CONTROL unfenced INSERT (expect kept=f)" \
  "DROP TABLE IF EXISTS k0; CREATE TABLE k0 (id int PRIMARY KEY)" \
  "INSERT INTO k0 SELECT g FROM generate_series(1, 5000) g" \
  "SELECT count(*) = 5000 FROM k0" \
  "SELECT 1"
case_ "row INSERT..SELECT new keys" \
  "DROP TABLE IF EXISTS k1; CREATE TABLE k1 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k1')" \
  "INSERT INTO k1 SELECT g, 50 FROM generate_series(1, 5000) g" \
  "SELECT count(*) = 5000 FROM k1" \
  "INSERT INTO k1 VALUES (4999, 40)"
case_ "row COPY new keys" \
  "DROP TABLE IF EXISTS k2; CREATE TABLE k2 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k2')" \
  "COPY k2 FROM PROGRAM 'seq 1 5000 | sed s/\$/,50/' WITH (FORMAT csv)" \
  "SELECT count(*) = 5000 FROM k2" \
  "INSERT INTO k2 VALUES (4999, 40)"
case_ "row bulk UPDATE raising tokens" \
  "DROP TABLE IF EXISTS k3; CREATE TABLE k3 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k3'); INSERT INTO k3 SELECT g, 10 FROM generate_series(1, 5000) g" \
  "UPDATE k3 SET tok = 50" \
  "SELECT min(tok::text::bigint) = 50 FROM k3" \
  "UPDATE k3 SET tok = 40 WHERE id = 4999"
case_ "resource INSERT..SELECT 40 resources raised" \
  "DROP TABLE IF EXISTS k4; DELETE FROM fencing.resource_hwm WHERE namespace='k4'; CREATE TABLE k4 (id serial PRIMARY KEY, r int, tok fencing_token); SELECT fencing_protect('k4', scope => 'resource', resource_column => 'r', resource_namespace => 'k4'); INSERT INTO k4 (r, tok) SELECT g, 10 FROM generate_series(1, 40) g" \
  "INSERT INTO k4 (r, tok) SELECT (g % 40) + 1, 50 FROM generate_series(1, 4000) g" \
  "SELECT min(hwm) = 50 FROM fencing.resource_hwm WHERE namespace='k4'" \
  "INSERT INTO k4 (r, tok) VALUES (39, 40)"
case_ "table COPY raised" \
  "DROP TABLE IF EXISTS k5; CREATE TABLE k5 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k5', scope => 'table'); INSERT INTO k5 VALUES (0, 10)" \
  "COPY k5 FROM PROGRAM 'seq 1 5000 | sed s/\$/,50/' WITH (FORMAT csv)" \
  "SELECT count(*) = 5001 FROM k5" \
  "INSERT INTO k5 VALUES (9999, 40)"
case_ "row DELETE folded (retirement)" \
  "DROP TABLE IF EXISTS k6; CREATE TABLE k6 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k6'); SELECT fencing_enable_retirement('k6'::regclass); INSERT INTO k6 SELECT g, 10 FROM generate_series(1, 5000) g" \
  "SET fencing.token = 50; DELETE FROM k6" \
  "SELECT floor = 50 FROM fencing.tombstone_floor WHERE relid = 'k6'::regclass" \
  "INSERT INTO k6 VALUES (4999, 40)"
case_ "row DELETE set-based tombstones" \
  "DROP TABLE IF EXISTS k7; CREATE TABLE k7 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k7'); INSERT INTO k7 SELECT g, 10 FROM generate_series(1, 5000) g" \
  "SET fencing.token = 50; DELETE FROM k7" \
  "SELECT count(*) = 5000 FROM fencing.row_tombstone WHERE relid = 'k7'::regclass" \
  "INSERT INTO k7 VALUES (4999, 40)"
case_ "row TRUNCATE folded" \
  "DROP TABLE IF EXISTS k8; CREATE TABLE k8 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k8'); SELECT fencing_enable_retirement('k8'::regclass); INSERT INTO k8 SELECT g, 50 FROM generate_series(1, 5000) g" \
  "TRUNCATE k8" \
  "SELECT floor = 50 FROM fencing.tombstone_floor WHERE relid = 'k8'::regclass" \
  "INSERT INTO k8 VALUES (4999, 40)"
case_ "row DROP partition folded" \
  "DROP TABLE IF EXISTS k9; CREATE TABLE k9 (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id); CREATE TABLE k9a PARTITION OF k9 FOR VALUES FROM (1) TO (10001); CREATE TABLE k9d PARTITION OF k9 DEFAULT; SELECT fencing_protect('k9'); SELECT fencing_enable_retirement('k9'::regclass); INSERT INTO k9 SELECT g, 50 FROM generate_series(1, 5000) g" \
  "DROP TABLE k9a" \
  "SELECT floor = 50 FROM fencing.tombstone_floor WHERE relid = 'k9'::regclass" \
  "INSERT INTO k9 VALUES (4999, 40)"
case_ "row DETACH partition (no retirement: tombstones)" \
  "DROP TABLE IF EXISTS k10, k10a; CREATE TABLE k10 (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id); CREATE TABLE k10a PARTITION OF k10 FOR VALUES FROM (1) TO (10001); CREATE TABLE k10d PARTITION OF k10 DEFAULT; SELECT fencing_protect('k10'); INSERT INTO k10 SELECT g, 50 FROM generate_series(1, 5000) g" \
  "ALTER TABLE k10 DETACH PARTITION k10a" \
  "SELECT count(*) = 5000 FROM fencing.row_tombstone WHERE relid = 'k10'::regclass" \
  "INSERT INTO k10 VALUES (4999, 40)"
case_ "row ATTACH merging a folded floor" \
  "DROP TABLE IF EXISTS k11, k11t; CREATE TABLE k11t (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k11t'); SELECT fencing_enable_retirement('k11t'::regclass); INSERT INTO k11t SELECT g, 50 FROM generate_series(1, 3000) g; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM k11t WHERE id <= 2000; COMMIT; CREATE TABLE k11 (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id); CREATE TABLE k11d PARTITION OF k11 DEFAULT; SELECT fencing_protect('k11')" \
  "ALTER TABLE k11 ATTACH PARTITION k11t FOR VALUES FROM (1) TO (10001)" \
  "SELECT floor = 50 FROM fencing.tombstone_floor WHERE relid = 'k11'::regclass" \
  "INSERT INTO k11 VALUES (100, 40)"
case_ "row fencing_transfer_state moving a folded floor" \
  "DROP TABLE IF EXISTS k12o, k12n; CREATE TABLE k12o (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k12o'); SELECT fencing_enable_retirement('k12o'::regclass); INSERT INTO k12o SELECT g, 50 FROM generate_series(1, 3000) g; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM k12o WHERE id <= 2000; COMMIT; CREATE TABLE k12n (id int PRIMARY KEY, tok fencing_token); INSERT INTO k12n SELECT * FROM k12o" \
  "SELECT fencing_transfer_state('k12o', 'k12n')" \
  "SELECT floor = 50 FROM fencing.tombstone_floor WHERE relid = 'k12n'::regclass" \
  "INSERT INTO k12n VALUES (100, 40)"
case_ "row recreate (DROP + RENAME adopting a folded floor)" \
  "DROP TABLE IF EXISTS k13, _tmp_k13; CREATE TABLE k13 (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k13'); SELECT fencing_enable_retirement('k13'::regclass); INSERT INTO k13 SELECT g, 50 FROM generate_series(1, 3000) g; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM k13 WHERE id <= 2000; COMMIT; CREATE TABLE _tmp_k13 (id int PRIMARY KEY, tok fencing_token, extra int); INSERT INTO _tmp_k13 (id, tok) SELECT id, tok FROM k13" \
  "BEGIN; DROP TABLE k13; ALTER TABLE _tmp_k13 RENAME TO k13; COMMIT;" \
  "SELECT floor = 50 FROM fencing.tombstone_floor WHERE relid = 'k13'::regclass" \
  "INSERT INTO k13 (id, tok) VALUES (100, 40)"
case_ "row fencing_transfer_state moving tombstones (no retirement)" \
  "DROP TABLE IF EXISTS k14o, k14n; CREATE TABLE k14o (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k14o'); INSERT INTO k14o SELECT g, 50 FROM generate_series(1, 3000) g; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM k14o WHERE id <= 2000; COMMIT; CREATE TABLE k14n (id int PRIMARY KEY, tok fencing_token); INSERT INTO k14n SELECT * FROM k14o" \
  "SELECT fencing_transfer_state('k14o', 'k14n')" \
  "SELECT count(*) = 2000 FROM fencing.row_tombstone WHERE relid = 'k14n'::regclass" \
  "INSERT INTO k14n VALUES (100, 40)"
case_ "table fencing_transfer_state moving a table HWM" \
  "DROP TABLE IF EXISTS k15o, k15n; CREATE TABLE k15o (id int PRIMARY KEY, tok fencing_token); SELECT fencing_protect('k15o', scope => 'table'); INSERT INTO k15o SELECT g, 50 FROM generate_series(1, 10) g; CREATE TABLE k15n (id int PRIMARY KEY, tok fencing_token); SELECT fencing_unprotect('k15n'); INSERT INTO k15n SELECT * FROM k15o" \
  "SELECT fencing_transfer_state('k15o', 'k15n')" \
  "SELECT hwm = 50 FROM fencing.table_hwm WHERE relid = 'k15n'::regclass" \
  "INSERT INTO k15n VALUES (100, 40)"
