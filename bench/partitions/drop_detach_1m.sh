#!/usr/bin/env bash
# What DROP TABLE and DETACH PARTITION of a row-scope fenced partition of
# ROWS rows (default 1M, every row carrying a token) cost: the DDL's time,
# and the size of fencing.row_tombstone (heap + indexes) it leaves. Against
# the server the libpq environment names (eval "$(test/cluster.sh env)").
# For the baseline without fencing's tombstones, run it against a build
# without them; UNFENCED=1 times the same DDL on an unfenced table.
set -euo pipefail
ROWS=${ROWS:-1000000}
db=bench_partitions
psql -X -q -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
run() { psql -X -q -At -d $db -v ON_ERROR_STOP=1 "$@"; }
run -c "CREATE EXTENSION fencing"
[ "${UNFENCED:-0}" = 1 ] && run -c "SET fencing.auto_protect = off" -c "ALTER DATABASE $db SET fencing.auto_protect = off"
ms() {  # ms SQL: wall time of SQL in ms
    local t0 t1
    t0=$(date +%s%N)
    run -c "$1" >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
for op in ${OPS:-drop detach}; do
    run -c "DROP TABLE IF EXISTS b, b_1, b_2" >/dev/null 2>&1 || true
    run -c "VACUUM fencing.row_tombstone" -c "CHECKPOINT"
    run -c "CREATE TABLE b (id bigint PRIMARY KEY, v int, fence fencing_token) PARTITION BY RANGE (id)" \
        -c "CREATE TABLE b_1 PARTITION OF b FOR VALUES FROM (0) TO ($ROWS)" \
        -c "CREATE TABLE b_2 PARTITION OF b FOR VALUES FROM ($ROWS) TO (MAXVALUE)"
    run -c "BEGIN" -c "SET LOCAL fencing.token = 7" \
        -c "INSERT INTO b SELECT g, 0, 7 FROM generate_series(0, $ROWS - 1) g" -c "COMMIT"
    run -c "VACUUM ANALYZE b_1" -c "CHECKPOINT"
    before=$(run -c "SELECT pg_total_relation_size('fencing.row_tombstone')")
    if [ $op = drop ]; then
        t=$(ms "DROP TABLE b_1")
    else
        t=$(ms "ALTER TABLE b DETACH PARTITION b_1")
    fi
    after=$(run -c "SELECT pg_total_relation_size('fencing.row_tombstone')")
    n=$(run -c "SELECT count(*) FROM fencing.row_tombstone WHERE relid = 'b'::regclass")
    echo "$op rows=$ROWS ms=$t tombstones=$n tombstone_bytes=$((after - before))"
done
psql -X -q -c "DROP DATABASE $db"
