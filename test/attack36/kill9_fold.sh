#!/usr/bin/env bash
# attack36: kill -9 right after an acknowledged folded DROP / TRUNCATE (index
# read of the highest token) under synchronous_commit = off and a 10 s WAL
# writer delay. After crash recovery: either the removal is gone with its
# floor (rows back), or the floor is there and a stale re-insert is refused.
set -u
cd "$(dirname "$0")/../.."
source /work/wt/atk35.env
eval "$(bash test/cluster.sh env)"
DATA=/tmp/fencing-cluster-$FENCING_PGPORT/data
as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
crash() {
  local pm; pm=$(head -1 $DATA/postmaster.pid)
  kill -9 $pm $(ps --ppid $pm -o pid=) 2>/dev/null; sleep 1
  rm -f $DATA/postmaster.pid /tmp/fencing-cluster-$FENCING_PGPORT/sock/.s.PGSQL.*
  as pg_ctl -D $DATA -l /tmp/fencing-cluster-$FENCING_PGPORT/server.log -w start >/dev/null
  for i in $(seq 1 30); do pg_isready -q && break; sleep 0.5; done
}
q -c "ALTER SYSTEM SET wal_writer_delay = 10000" -c "ALTER SYSTEM SET synchronous_commit = off" -c "SELECT pg_reload_conf()" >/dev/null
for kind in drop truncate; do
  q >/dev/null 2>&1 <<SQL
DROP TABLE IF EXISTS kf CASCADE;
CREATE TABLE kf (id int PRIMARY KEY, tok fencing_token) PARTITION BY RANGE (id);
CREATE TABLE kf_1 PARTITION OF kf FOR VALUES FROM (0) TO (10000);
CREATE INDEX ON kf (tok);
SELECT fencing_enable_retirement('kf'::regclass);
INSERT INTO kf SELECT g, g FROM generate_series(1, 3000) g;
CHECKPOINT;
SQL
  if [ $kind = drop ]; then stmt="DROP TABLE kf_1"; else stmt="TRUNCATE kf_1"; fi
  q -c "$stmt" >/dev/null 2>&1 || echo "$kind: statement failed"
  crash
  rows=$(q -c "SELECT count(*) FROM kf" 2>/dev/null)
  floor=$(q -c "SELECT floor FROM fencing.tombstone_floor WHERE relid = 'kf'::regclass")
  [ $kind = drop ] && q -c "CREATE TABLE IF NOT EXISTS kf_1 PARTITION OF kf FOR VALUES FROM (0) TO (10000)" >/dev/null 2>&1
  if psql -XAtq -c "INSERT INTO kf VALUES (2999, 2500)" 2>&1 | grep -q ERROR; then st=refused; else st=ACCEPTED; fi
  verdict=HELD
  if [ "${rows:-0}" = 3000 ]; then verdict="HELD (removal lost whole)"; elif [ "${floor:-0}" != 3000 ] || [ $st = ACCEPTED ]; then verdict=HOLE; fi
  echo "kill9 $kind: rows=$rows floor=${floor:-none} stale(2999 at 2500)=$st -> $verdict"
done
q -c "ALTER SYSTEM RESET wal_writer_delay" -c "ALTER SYSTEM RESET synchronous_commit" -c "SELECT pg_reload_conf()" >/dev/null
