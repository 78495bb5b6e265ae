#!/bin/bash
# A shard whose tombstones were retired into its floor (fencing_retire on the
# worker) has no tombstone rows left: is the move still refused, and are the
# deleted keys' stale re-inserts refused after the move?
. "$(dirname "$0")/lib.sh"
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
q $C "DROP TABLE IF EXISTS fl" >/dev/null
q $C "SET fencing.auto_protect = off; CREATE TABLE fl (k text PRIMARY KEY, v int, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('fl', 'k', shard_count => 4)" >/dev/null
q $C "INSERT INTO fl SELECT 'k'||g, g, 10 FROM generate_series(1, 200) g" >/dev/null
sh=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = 'fl'::regclass AND nodeport = $W1 ORDER BY shardid LIMIT 1")
shn=$(q $C "SELECT shard_name('fl'::regclass, $sh)")
keys=$(q $C "SELECT string_agg(quote_literal(k), ',') FROM fl WHERE get_shard_id_for_distribution_column('fl', k) = $sh")
n=$(q $C "SELECT count(*) FROM fl WHERE get_shard_id_for_distribution_column('fl', k) = $sh")
q $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM fl WHERE k IN ($keys); COMMIT;" >/dev/null
say "tombstones on the shard's worker" "$(q $W1 "SELECT count(*) FROM fencing.row_tombstone WHERE relid = '$shn'::regclass")"
say "move with tombstones (expect 0A000)" "$(state $C "SELECT citus_move_shard_placement($sh, '127.0.0.1', $W1, '127.0.0.1', $W2, shard_transfer_mode => 'force_logical')")"
say "fencing_enable_retirement('$shn') on the worker" "$(state $W1 "SELECT fencing_enable_retirement('$shn'::regclass)")"
say "fencing_retire('$shn', '0 s') on the worker" "$(state $W1 "SELECT fencing_retire('$shn'::regclass, '0 s')")"
say "tombstones left / floor on the worker" "$(q $W1 "SELECT count(*) FROM fencing.row_tombstone WHERE relid = '$shn'::regclass") / $(q $W1 "SELECT floor FROM fencing.tombstone_floor WHERE relid = '$shn'::regclass")"
say "a stale re-insert before the move (expect TF001)" "$(state $C "INSERT INTO fl VALUES ('k1x', 0, 1)" >/dev/null; k=$(q $C "SELECT k FROM unnest(ARRAY[$keys]) k LIMIT 1"); state $C "INSERT INTO fl VALUES ('$k', 0, 49)")"
say "move after retirement (force_logical)" "$(state $C "SELECT citus_move_shard_placement($sh, '127.0.0.1', $W1, '127.0.0.1', $W2, shard_transfer_mode => 'force_logical')")"
say "shard now on" "$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh")"
say "floor on the new worker" "$(q $W2 "SELECT coalesce(max(floor)::text, 'none') FROM fencing.tombstone_floor WHERE relid = '$shn'::regclass")"
acc=0; tot=0
for k in $(q $C "SELECT string_agg(k, ' ') FROM unnest(ARRAY[$keys]) k"); do
    tot=$((tot + 1))
    s=$(state $C "INSERT INTO fl VALUES ('$k', 0, 49)")
    [ "$s" = ok ] && acc=$((acc + 1))
done
say "stale re-inserts (token 49 < delete 50) of the $n deleted keys accepted" "$acc of $tot"
STALE=$((STALE + acc))
summary
