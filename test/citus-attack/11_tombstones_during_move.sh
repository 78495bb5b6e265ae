#!/bin/bash
# Deletes (fenced, token 50) of a shard's keys while a force_logical move of
# that shard copies and catches up: the move's check ran at CREATE
# PUBLICATION, before these tombstones existed. Afterwards each deleted key is
# re-inserted with the stale token 49: every accept is a stale write.
# ATK_MODE=block_writes runs the same with a blocking move (known open).
. "$(dirname "$0")/lib.sh"
MODE=${ATK_MODE:-force_logical}
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
T=race_${MODE}
q $C "DROP TABLE IF EXISTS $T" >/dev/null
q $C "SET fencing.auto_protect = off; CREATE TABLE $T (k int PRIMARY KEY, v int, pad text, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('$T', 'k', shard_count => 2, colocate_with => 'none')" >/dev/null
q $C "INSERT INTO $T SELECT g, g, repeat('x', 200), 10 FROM generate_series(1, 150000) g" >/dev/null
sh=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = '$T'::regclass AND nodeport <> $C ORDER BY shardid LIMIT 1")
src=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh")
dst=$W2; [ "$src" = $W2 ] && dst=$W1
q $C "SELECT k FROM $T WHERE get_shard_id_for_distribution_column('$T', k) = $sh ORDER BY k LIMIT 200" > /dev/null
keys=$("${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $C -U postgres -X -At -c "SELECT k FROM $T WHERE get_shard_id_for_distribution_column('$T', k) = $sh ORDER BY k LIMIT 200")
log=$BASE/race_$MODE.log; : > "$log"
sql=$BASE/race_$MODE.sql; : > "$sql"
for k in $keys; do
    echo "BEGIN; SET LOCAL fencing.token = 50; DELETE FROM $T WHERE k = $k; COMMIT; \\echo $k" >> "$sql"
done
"${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $C -U postgres -X -q -At -c "SELECT citus_move_shard_placement($sh, '127.0.0.1', $src, '127.0.0.1', $dst, shard_transfer_mode => '$MODE')" > "$BASE/move.out" 2>&1 &
mpid=$!
# The deletes start once the move is under way (its publication, or for a
# blocking move its copy, exists on the source).
for i in $(seq 1 200); do
    [ "$(q $src "SELECT count(*) FROM pg_publication") $(q $dst "SELECT count(*) FROM pg_class WHERE relname LIKE '${T}_$sh%'")" != "0 0" ] && break
    sleep 0.05
done
PGOPTIONS="-c citus.propagate_set_commands=local" "${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $C -U postgres -X -q -At -f "$sql" > "$log" 2>&1
wait $mpid
say "move ($MODE) of shard $sh $src -> $dst" "$(grep -o 'ERROR: .*' "$BASE/move.out" | head -1 || true)$(grep -q ERROR "$BASE/move.out" || echo ok)"
say "shard now on" "$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh")"
say "fenced deletes committed during the move / errors" "$(grep -c '^[0-9]' "$log") / $(grep -c ERROR "$log")"
say "tombstones on source / target" "$(q $src "SELECT count(*) FROM fencing.row_tombstone") / $(q $dst "SELECT count(*) FROM fencing.row_tombstone")"
acc=0; tot=0
for k in $(grep '^[0-9]' "$log"); do
    tot=$((tot + 1))
    [ "$(state $C "INSERT INTO $T VALUES ($k, 0, 'stale', 49)")" = ok ] && acc=$((acc + 1))
done
say "stale re-inserts (49 < 50) of the deleted keys accepted" "$acc of $tot"
STALE=$((STALE + acc))
summary
