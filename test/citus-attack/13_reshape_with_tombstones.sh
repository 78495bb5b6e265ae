#!/bin/bash
# Citus functions that rewrite a distributed table into new shards or a new
# table without a publication: alter_distributed_table (shard_count),
# undistribute_table, isolate_tenant_to_new_shard, citus_split_shard_by_split_points
# (default mode). Each table gets 20 fenced deletes (token 50) first; then the
# 20 stale re-inserts (token 49): every accept is a stale write.
. "$(dirname "$0")/lib.sh"
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
setup() { # table
    q $C "DROP TABLE IF EXISTS $1" >/dev/null
    q $C "SET fencing.auto_protect = off; CREATE TABLE $1 (k int PRIMARY KEY, v int, fence fencing_token)" >/dev/null
    q $C "SELECT create_distributed_table('$1', 'k', shard_count => 4, colocate_with => 'none')" >/dev/null
    q $C "INSERT INTO $1 SELECT g, g, 10 FROM generate_series(1, 200) g" >/dev/null
    q $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM $1 WHERE k <= 20; COMMIT;" >/dev/null
}
reinsert() { # table label
    local acc=0 k
    for k in $(seq 1 20); do
        [ "$(state $C "INSERT INTO $1 VALUES ($k, 0, 49)")" = ok ] && acc=$((acc + 1))
    done
    say "$2: stale re-inserts accepted" "$acc of 20"
    STALE=$((STALE + acc))
}
setup adt
say "alter_distributed_table(adt, shard_count => 8)" "$(state $C "SELECT alter_distributed_table('adt', shard_count => 8)")"
reinsert adt "after the refused alter_distributed_table"
say "the same with fencing.auto_protect = off in the session" "$(state $C "SET fencing.auto_protect = off; SELECT alter_distributed_table('adt', shard_count => 8)")"
say "adt's new shards protected in row scope" "$(q $C "SELECT count(*) FILTER (WHERE result = 'row') || ' of ' || count(*) FROM run_command_on_shards('adt', \$\$SELECT scope FROM fencing_protected WHERE table_name = '%s'::regclass\$\$)")"
reinsert adt "after alter_distributed_table (auto_protect off)"
setup udt
say "undistribute_table(udt)" "$(state $C "SELECT undistribute_table('udt')")"
say "udt on the coordinator protected as" "$(q $C "SELECT coalesce(max(scope::text), 'not protected') FROM fencing_protected WHERE table_name = 'udt'::regclass")"
reinsert udt "after undistribute_table"
setup iso
say "isolate_tenant_to_new_shard(iso, 5)" "$(state $C "SELECT isolate_tenant_to_new_shard('iso', 5, 'CASCADE')")"
reinsert iso "after isolate_tenant_to_new_shard"
setup bwm
sh=$(q $C "SELECT get_shard_id_for_distribution_column('bwm', 3)")
from=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh"); to=$W2; [ "$from" = $W2 ] && to=$W1
say "citus_move_shard_placement (block_writes, known open) of a shard with tombstones" "$(state $C "SELECT citus_move_shard_placement($sh, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode => 'block_writes')")"
reinsert bwm "after the block_writes move"
setup spl
sh=$(q $C "SELECT get_shard_id_for_distribution_column('spl', 3)")
node=$(q $C "SELECT nodeid FROM citus_shards c JOIN pg_dist_node n USING (nodeport) WHERE shardid = $sh")
mid=$(q $C "SELECT ((shardminvalue::bigint + shardmaxvalue::bigint) / 2)::int FROM pg_dist_shard WHERE shardid = $sh")
say "citus_split_shard_by_split_points (default, auto mode)" "$(state $C "SELECT citus_split_shard_by_split_points($sh, ARRAY['$mid'], ARRAY[$node, $node])")"
say "citus_split_shard_by_split_points (block_writes, known open)" "$(state $C "SELECT citus_split_shard_by_split_points($sh, ARRAY['$mid'], ARRAY[$node, $node], shard_transfer_mode => 'block_writes')")"
reinsert spl "after the splits"
summary
