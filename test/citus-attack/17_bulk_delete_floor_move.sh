#!/bin/bash
# Retirement enabled on a shard (its owner, on the worker): one DELETE of more
# than 1000 rows raises the shard's floor instead of writing tombstones. The
# move check looks at tombstone rows only: does the floor travel?
. "$(dirname "$0")/lib.sh"
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
q $C "DROP TABLE IF EXISTS bd" >/dev/null
q $C "SET fencing.auto_protect = off; CREATE TABLE bd (k int PRIMARY KEY, v int, fence fencing_token); SELECT create_distributed_table('bd', 'k', shard_count => 2, colocate_with => 'none')" >/dev/null
q $C "INSERT INTO bd SELECT g, g, 10 FROM generate_series(1, 4000) g" >/dev/null
sh=$(q $C "SELECT get_shard_id_for_distribution_column('bd', 1)")
name=$(q $C "SELECT shard_name('bd'::regclass, $sh)")
from=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh"); to=$W2; [ "$from" = $W2 ] && to=$W1
say "fencing_enable_retirement(shard) on its worker" "$(state $from "SELECT fencing_enable_retirement('$name'::regclass)")"
keys=$(q $C "SELECT string_agg(k::text, ',') FROM bd WHERE get_shard_id_for_distribution_column('bd', k) = $sh")
say "one DELETE of the shard's rows" "$(state $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM bd WHERE k IN ($keys); COMMIT;")"
say "tombstone rows / floor on the worker" "$(q $from "SELECT count(*) FROM fencing.row_tombstone WHERE relid = '$name'::regclass") / $(q $from "SELECT floor FROM fencing.tombstone_floor WHERE relid = '$name'::regclass")"
say "stale re-insert of key 1 before the move" "$(state $C "INSERT INTO bd VALUES (1, 0, 49)")"
say "force_logical move" "$(state $C "SELECT citus_move_shard_placement($sh, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode => 'force_logical')")"
acc=0
for k in $(seq 1 30); do
    [ "$(state $C "INSERT INTO bd VALUES ($k, 0, 49)")" = ok ] && acc=$((acc + 1))
done
deleted=$(q $C "SELECT count(*) FROM generate_series(1, 30) k WHERE get_shard_id_for_distribution_column('bd', k) = $sh")
say "stale re-inserts (49 < floor 50) of keys 1..30 ($deleted on the shard) accepted" "$acc of $deleted"
STALE=$((STALE + acc))
summary
