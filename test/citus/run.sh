#!/bin/bash
# fencing on Citus: a coordinator and two workers on loopback, started here
# from scratch, and the cases of docs/citus.md asserted on them. Not part of
# `make test` (Citus is not packaged by Debian): run it by hand where Citus is
# installed into the PostgreSQL that pg_config names.
#
#   bash test/citus/run.sh         ports CITUS_PORTS (default "54601 54602 54603")
#
# Exit status: 0 all passed, 1 a check failed, 77 Citus is not installed (no
# check ran: that is a skip, never a pass).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. test/lib/checks.sh

. test/citus/cluster.sh
skip_without_citus
citus_cluster "54601 54602 54603" CITUS_PORTS "wal_level = logical"

citus_topology
check "CREATE EXTENSION fencing on the coordinator reaches both workers" "2" \
    "$(q $C "SELECT count(*) FROM run_command_on_workers(\$\$SELECT extversion FROM pg_extension WHERE extname = 'fencing'\$\$) WHERE success AND result <> ''")"

# ---- leases: the coordinator is the one lease authority
check "fencing_acquire on the coordinator issues token 1" "1" \
    "$(q $C "SELECT fencing_acquire('job', 'a', '30 s')")"
for p in $W1 $W2; do
    check "fencing_acquire on worker $p refused" "0A000" "$(state $p "SELECT fencing_acquire('job', 'b', '30 s')")"
    check "fencing_acquire_all on worker $p refused" "0A000" \
        "$(state $p "SELECT fencing_acquire_all(ARRAY['x','y'], 'b', '30 s')")"
    check "fencing_check on worker $p refused" "0A000" "$(state $p "SELECT fencing_check('job', 1)")"
    check "fencing_renew on worker $p refused" "0A000" "$(state $p "SELECT fencing_renew('job', 1, '30 s')")"
    check "fencing_release on worker $p refused" "0A000" "$(state $p "SELECT fencing_release('job', 1)")"
    check "fencing_resource_advance on worker $p refused" "0A000" \
        "$(state $p "SELECT fencing_resource_advance('job', 5)")"
done
check "no lease row was written on any worker" "0,0" \
    "$(q $C "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(\$\$SELECT count(*) FROM fencing.lease\$\$)")"
check "fencing_check on the coordinator still answers" "t" "$(q $C "SELECT fencing_check('job', 1)")"

# ---- row scope on a distributed table (distributed before it is protected)
q $C "SET fencing.auto_protect = off; CREATE TABLE inv (item text PRIMARY KEY, stock int, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('inv', 'item', shard_count => 4)" >/dev/null
check "every shard protected in row scope by auto-protection on its worker" "4" \
    "$(q $C "SELECT count(*) FROM run_command_on_shards('inv', \$\$SELECT scope FROM fencing_protected WHERE table_name = '%s'::regclass\$\$) WHERE result = 'row'")"
q $C "INSERT INTO inv VALUES ('a', 1, 10), ('b', 1, 30)" >/dev/null
check "stale UPDATE through the coordinator refused by the worker" "TF001" \
    "$(state $C "UPDATE inv SET stock = 2, fence = 9 WHERE item = 'a'")"
check "token-less UPDATE through the coordinator refused" "TF002" \
    "$(state $C "UPDATE inv SET stock = 2 WHERE item = 'a'")"
check "SET LOCAL forwarded with citus.propagate_set_commands = local: stale refused" "TF001" \
    "$(state $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 9; UPDATE inv SET stock = 3 WHERE item = 'a'; COMMIT;")"
check "SET LOCAL forwarded with citus.propagate_set_commands = local: current admitted" "ok" \
    "$(state $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 11; UPDATE inv SET stock = 3 WHERE item = 'a'; COMMIT;")"
check "the admitted write carries its token on the shard" "11" "$(q $C "SELECT fence FROM inv WHERE item = 'a'")"
check "a deleted key's stale re-insert refused (tombstone on the shard)" "TF001" \
    "$(state $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 20; DELETE FROM inv WHERE item = 'a'; COMMIT; INSERT INTO inv VALUES ('a', 1, 19)")"

check "set_config('fencing.token', …, true), what the client libraries send, is not forwarded: TF002" "TF002" \
    "$(state $C "SET citus.propagate_set_commands = 'local'; BEGIN; SELECT set_config('fencing.token', '40', true); UPDATE inv SET stock = 4 WHERE item = 'b'; COMMIT;")"

# ---- the coordinator's table of a Citus table is metadata: never protected
check "fencing_protect on the coordinator's table of a distributed table refused" "0A000" \
    "$(state $C "SELECT fencing_protect('inv')")"
q $C "CREATE TABLE late (k text PRIMARY KEY, v int)" >/dev/null
q $C "SELECT create_distributed_table('late', 'k', shard_count => 4)" >/dev/null
q $C "ALTER TABLE late ADD COLUMN fence fencing_token" >/dev/null
check "a token column added to a distributed table: its coordinator table is not auto-protected" "0" \
    "$(q $C "SELECT count(*) FROM fencing_protected WHERE table_name = 'late'::regclass")"
check "… and its guards do not block a shard move (no trigger on the coordinator's table)" "0" \
    "$(q $C "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'late'::regclass AND NOT tgisinternal")"
check "… while each of its 4 shards is protected in row scope on its worker" "4" \
    "$(q $C "SELECT count(*) FROM run_command_on_shards('late', \$\$SELECT scope FROM fencing_protected WHERE table_name = '%s'::regclass\$\$) WHERE result = 'row'")"

# ---- fencing_distribute: a fenced (auto-protected) table with rows becomes distributed
q $C "CREATE TABLE acct (id int PRIMARY KEY, bal int, fence fencing_token)" >/dev/null
q $C "INSERT INTO acct SELECT g, 0, 5 FROM generate_series(1, 50) g" >/dev/null
check "create_distributed_table of the fenced table itself: Citus refuses (triggers)" "XX000" \
    "$(state $C "SELECT create_distributed_table('acct', 'id')")"
check "fencing_distribute of the fenced table" "ok" "$(state $C "SELECT fencing_distribute('acct', 'id')")"
check "every shard of acct protected in row scope on its worker" \
    "$(q $C "SELECT count(*) FROM citus_shards WHERE table_name = 'acct'::regclass")" \
    "$(q $C "SELECT count(*) FROM run_command_on_shards('acct', \$\$SELECT scope FROM fencing_protected WHERE table_name = '%s'::regclass\$\$) WHERE result = 'row'")"
check "its 50 rows moved to the shards with their tokens" "50" "$(q $C "SELECT count(*) FROM acct WHERE fence = 5")"
check "a stale UPDATE of a distributed row refused" "TF001" "$(state $C "UPDATE acct SET bal = 1, fence = 4 WHERE id = 7")"
q $C "CREATE TABLE acct_strict (id int PRIMARY KEY, fence fencing_token); SELECT fencing_protect('acct_strict', strict => true)" >/dev/null
check "fencing_distribute of a strict table refused (its shards would not be strict)" "0A000" \
    "$(state $C "SELECT fencing_distribute('acct_strict', 'id')")"
q $C "CREATE TABLE acct_del (id int PRIMARY KEY, fence fencing_token); INSERT INTO acct_del VALUES (1, 5); DELETE FROM acct_del WHERE fence = 5 AND id = 1" >/dev/null
q $C "BEGIN; SET LOCAL fencing.token = 6; DELETE FROM acct_del; INSERT INTO acct_del VALUES (2, 6); DELETE FROM acct_del WHERE id = 2; COMMIT;" >/dev/null
check "fencing_distribute of a table with tombstones refused" "0A000" \
    "$(state $C "SELECT fencing_distribute('acct_del', 'id')")"
q $C "CREATE TABLE refd (k text PRIMARY KEY, v int, fence fencing_token); INSERT INTO refd VALUES ('a', 1, 10)" >/dev/null
check "fencing_distribute of a fenced table as a reference table" "ok" "$(state $C "SELECT fencing_distribute('refd')")"
check "its placement on each of the 3 nodes is protected in row scope" "1,1,1" \
    "$(q $C "SELECT string_agg(result, ',' ORDER BY nodeid) FROM run_command_on_all_nodes(\$\$SELECT count(*) FROM fencing_protected WHERE table_name::text LIKE 'refd\\_%' AND scope = 'row'\$\$)")"
check "a stale write to the reference table refused" "TF001" "$(state $C "UPDATE refd SET v = 2, fence = 9 WHERE k = 'a'")"

shard_a=$(q $C "SELECT shard_name('inv'::regclass, get_shard_id_for_distribution_column('inv', 'b'))")
port_a=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('inv', 'b')")
check "a stale write directly on the worker's shard refused" "TF001" \
    "$(state $port_a "UPDATE $shard_a SET stock = 5, fence = 29 WHERE item = 'b'")"

# ---- leases from every node: no token issued twice
tokens=""
for i in 1 2 3 4 5; do
    for p in $W1 $W2; do q $p "SELECT fencing_acquire('hot', 'w$p-$i', '1 s')" >/dev/null; done
    t=$(q $C "SELECT fencing_acquire('hot', 'c$i', '30 s')")
    tokens="$tokens $t"
    q $C "SELECT fencing_release('hot', $t)" >/dev/null
done
check "5 rounds of acquires on all three nodes: the coordinator issued 5 distinct tokens, none twice" "5 5" \
    "$(tr ' ' '\n' <<< "$tokens" | grep -c .) $(tr ' ' '\n' <<< "$tokens" | grep . | sort -u | wc -l)"

# ---- fail closed: what per-node state cannot enforce
check "fencing_advance on a distributed table (coordinator) refused" "0A000" \
    "$(state $C "SELECT fencing_advance('inv', 50, '{\"item\": \"zz\"}')")"
check "fencing_high_water of the coordinator's table of a distributed table refused" "0A000" \
    "$(state $C "SELECT fencing_high_water('inv', '{\"item\": \"a\"}')")"
# fenced_update and fenced_upsert are answered (test/citus/single_node_answers.sh).
check "fenced_delete on the coordinator's table of a distributed table refused" "0A000" \
    "$(state $C "SELECT fenced_delete('inv', 50, '{\"item\": \"b\"}')")"
shard_w1=$(q $C "SELECT shard_name('inv'::regclass, shardid) FROM citus_shards WHERE table_name = 'inv'::regclass AND nodeport = $W1 LIMIT 1")
check "fencing_advance on a worker's shard refused" "0A000" \
    "$(state $W1 "SELECT fencing_advance('$shard_w1', 50, '{\"item\": \"zz\"}')")"
q $C "SET fencing.auto_protect = off; CREATE TABLE orders (id bigint PRIMARY KEY, res text NOT NULL, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('orders', 'id', shard_count => 4)" >/dev/null
check "orders is distributed" "h" "$(q $C "SELECT partmethod FROM pg_dist_partition WHERE logicalrelid = 'orders'::regclass")"
check "resource scope on a distributed table (coordinator) refused" "0A000" \
    "$(state $C "SELECT fencing_protect('orders', scope => 'resource', resource_column => 'res')")"
check "table scope on a distributed table (coordinator) refused" "0A000" \
    "$(state $C "SELECT fencing_protect('orders', scope => 'table')")"
check "resource scope on any shard (workers) refused: 0 of 4 succeed" "0" \
    "$(q $C "SELECT count(*) FROM run_command_on_shards('orders', \$\$SELECT fencing_protect('%s', scope => 'resource', resource_column => 'res')\$\$) WHERE success")"
check "table scope on any shard (workers) refused: 0 of 4 succeed" "0" \
    "$(q $C "SELECT count(*) FROM run_command_on_shards('orders', \$\$SELECT fencing_protect('%s', scope => 'table')\$\$) WHERE success")"
# A shard left in resource scope (by 1.5, or by hand): every write to it is refused.
shard_o=$(q $C "SELECT shard_name('orders'::regclass, shardid) FROM citus_shards WHERE table_name = 'orders'::regclass AND nodeport = $W1 LIMIT 1")
id_o=$(q $C "SELECT g FROM generate_series(1, 1000) g WHERE shard_name('orders'::regclass, get_shard_id_for_distribution_column('orders', g)) = '$shard_o' LIMIT 1")
q $W1 "INSERT INTO fencing.protected (relid, token_column, scope, resource_column, resource_namespace) VALUES ('$shard_o', 'fence', 'resource', 'res', 'default')" >/dev/null
check "a shard left in resource scope: the write through the coordinator refused" "0A000" \
    "$(state $C "INSERT INTO orders VALUES ($id_o, 'r', 5)")"
check "a shard left in resource scope: a direct write on the worker refused" "0A000" \
    "$(state $W1 "INSERT INTO $shard_o VALUES ($id_o, 'r', 5)")"
check "a shard left in resource scope: no HWM was raised on the worker" "0" \
    "$(q $W1 "SELECT count(*) FROM fencing.resource_hwm")"

# ---- shard moves: a shard with tombstones stays; one without moves
q $C "SET fencing.auto_protect = off; CREATE TABLE mv (k text PRIMARY KEY, v int, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('mv', 'k', shard_count => 4)" >/dev/null
q $C "INSERT INTO mv SELECT 'k'||g, g, 10 FROM generate_series(1, 400) g" >/dev/null
sh_t=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = 'mv'::regclass AND nodeport = $W1 ORDER BY shardid LIMIT 1")
sh_n=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = 'mv'::regclass AND nodeport = $W1 ORDER BY shardid OFFSET 1 LIMIT 1")
key_t=$(q $C "SELECT k FROM mv WHERE get_shard_id_for_distribution_column('mv', k) = $sh_t LIMIT 1")
q $C "DELETE FROM mv WHERE k = '$key_t' AND fence = 10" >/dev/null
q $C "UPDATE mv SET v = 0, fence = 30 WHERE k = '$key_t'" >/dev/null
q $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 30; DELETE FROM mv WHERE k = '$key_t'; COMMIT;" >/dev/null
check "the deleted key left a tombstone on its worker" "1" \
    "$(q $W1 "SELECT count(*) FROM fencing.row_tombstone")"
check "logical move of the shard with a tombstone refused" "0A000" \
    "$(state $C "SELECT citus_move_shard_placement($sh_t, '127.0.0.1', $W1, '127.0.0.1', $W2, shard_transfer_mode => 'force_logical')")"
check "the refused shard stayed on its worker" "$W1" \
    "$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh_t")"
check "the stale re-insert of the deleted key is still refused" "TF001" \
    "$(state $C "INSERT INTO mv VALUES ('$key_t', 0, 29)")"
check "logical move of a shard without tombstones allowed" "ok" \
    "$(state $C "SELECT citus_move_shard_placement($sh_n, '127.0.0.1', $W1, '127.0.0.1', $W2, shard_transfer_mode => 'force_logical')")"
check "the moved shard is protected in row scope on its new worker" "row" \
    "$(q $W2 "SELECT scope FROM fencing_protected WHERE table_name = (SELECT shard_name('mv'::regclass, $sh_n))::regclass")"
check "a stale UPDATE of a moved row refused on the new worker" "TF001" \
    "$(state $C "UPDATE mv SET v = 1, fence = 9 WHERE k = (SELECT k FROM mv WHERE get_shard_id_for_distribution_column('mv', k) = $sh_n LIMIT 1)")"

q $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 60; DELETE FROM mv WHERE k IN (SELECT 'k'||g FROM generate_series(100, 140) g); COMMIT;" >/dev/null
check "tombstones on every shard of mv" "4" \
    "$(q $C "SELECT count(*) FROM run_command_on_shards('mv', \$\$SELECT count(*) FROM fencing.row_tombstone WHERE relid = '%s'::regclass\$\$) WHERE result::int > 0")"
check "rebalance_table_shards would move a shard with tombstones: refused" "0A000" \
    "$(state $C "SELECT rebalance_table_shards('mv', shard_transfer_mode => 'force_logical')")"
check "the 41 deleted keys are gone" "0" \
    "$(q $C "SELECT count(*) FROM mv WHERE k IN (SELECT 'k'||g FROM generate_series(100, 140) g)")"
refused=0
for g in $(seq 100 140); do
    [ "$(state $C "INSERT INTO mv VALUES ('k$g', 0, 59)")" = TF001 ] && refused=$((refused + 1))
done
check "stale re-inserts of deleted keys after the refused rebalance: all refused (TF001)" "41" "$refused"

# ---- state outside tombstone rows, and Citus functions that rewrite a table
# A shard whose tombstones were retired into its floor: the floor must stop
# the stale re-insert after a move (refuse the move, or carry the floor).
q $C "SET fencing.auto_protect = off; CREATE TABLE fl (k text PRIMARY KEY, v int, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('fl', 'k', shard_count => 2, colocate_with => 'none')" >/dev/null
q $C "INSERT INTO fl SELECT 'k'||g, g, 10 FROM generate_series(1, 20) g" >/dev/null
sh_f=$(q $C "SELECT get_shard_id_for_distribution_column('fl', 'k1')")
name_f=$(q $C "SELECT shard_name('fl'::regclass, $sh_f)")
port_f=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh_f")
q $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM fl WHERE k = 'k1'; COMMIT;" >/dev/null
q $port_f "SELECT fencing_enable_retirement('$name_f'::regclass); SELECT fencing_retire('$name_f'::regclass, '0 s')" >/dev/null
to_f=$W2; [ "$port_f" = $W2 ] && to_f=$W1
q $C "SELECT citus_move_shard_placement($sh_f, '127.0.0.1', $port_f, '127.0.0.1', $to_f, shard_transfer_mode => 'force_logical')" >/dev/null
check "a key deleted and retired into the shard's floor: its stale re-insert refused after a move attempt" "TF001" \
    "$(state $C "INSERT INTO fl VALUES ('k1', 0, 49)")"
# undistribute_table copies the rows into a new coordinator table: the
# shards' tombstones must not be lost with them.
q $C "SET fencing.auto_protect = off; CREATE TABLE ud (k int PRIMARY KEY, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('ud', 'k', shard_count => 2, colocate_with => 'none')" >/dev/null
q $C "INSERT INTO ud VALUES (1, 10); SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM ud WHERE k = 1; COMMIT;" >/dev/null
check "undistribute_table of a fenced distributed table refused" "0A000" \
    "$(state $C "SELECT undistribute_table('ud')")"
check "a deleted key's stale re-insert refused after an undistribute_table attempt" "TF001" \
    "$(state $C "INSERT INTO ud VALUES (1, 49)")"
check "alter_distributed_table(shard_count) of a fenced table refused, auto-protection off too" "0A000" \
    "$(state $C "SET fencing.auto_protect = off; SELECT alter_distributed_table('ud', shard_count => 3)")"
check "alter_table_set_access_method of a fenced distributed table refused" "0A000" \
    "$(state $C "SELECT alter_table_set_access_method('ud', 'heap')")"
check "ud still has its 2 shards with their tombstone" "2 1" \
    "$(q $C "SELECT count(*) FROM citus_shards WHERE table_name = 'ud'::regclass") $(q $C "SELECT sum(result::int) FROM run_command_on_shards('ud', \$\$SELECT count(*) FROM fencing.row_tombstone WHERE relid = '%s'::regclass\$\$)")"
q $C "CREATE TABLE plain_ud (k int PRIMARY KEY, v int); SELECT create_distributed_table('plain_ud', 'k', shard_count => 2)" >/dev/null
check "undistribute_table of a distributed table without a token column allowed" "ok" \
    "$(state $C "SELECT undistribute_table('plain_ud')")"

# ---- moves and splits that copy rows with COPY (no publication)
q $C "SET fencing.auto_protect = off; CREATE TABLE bw (k int PRIMARY KEY, v int, fence fencing_token)" >/dev/null
q $C "SELECT create_distributed_table('bw', 'k', shard_count => 4, colocate_with => 'none')" >/dev/null
q $C "INSERT INTO bw SELECT g, g, 10 FROM generate_series(1, 200) g" >/dev/null
sh_b=$(q $C "SELECT get_shard_id_for_distribution_column('bw', 3)")
from_b=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh_b"); to_b=$W2; [ "$from_b" = $W2 ] && to_b=$W1
q $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM bw WHERE k = 3; COMMIT;" >/dev/null
check "block_writes move of a shard with a tombstone refused" "0A000" \
    "$(state $C "SELECT citus_move_shard_placement($sh_b, '127.0.0.1', $from_b, '127.0.0.1', $to_b, shard_transfer_mode => 'block_writes')")"
check "… the shard stayed on its worker" "$from_b" "$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh_b")"
node_b=$(q $C "SELECT nodeid FROM pg_dist_node WHERE nodeport = $from_b")
mid_b=$(q $C "SELECT ((shardminvalue::bigint + shardmaxvalue::bigint) / 2)::int FROM pg_dist_shard WHERE shardid = $sh_b")
check "blocking split of a shard with a tombstone refused" "0A000" \
    "$(state $C "SELECT citus_split_shard_by_split_points($sh_b, ARRAY['$mid_b'], ARRAY[$node_b, $node_b], shard_transfer_mode => 'block_writes')")"
check "… the stale re-insert of its deleted key refused" "TF001" "$(state $C "INSERT INTO bw VALUES (3, 0, 49)")"
sh_c=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = 'bw'::regclass AND shardid <> $sh_b AND nodeport = $from_b AND shardid NOT IN (SELECT get_shard_id_for_distribution_column('bw', 3)) LIMIT 1")
check "block_writes move of a shard without tombstones allowed" "ok" \
    "$(state $C "SELECT citus_move_shard_placement($sh_c, '127.0.0.1', $from_b, '127.0.0.1', $to_b, shard_transfer_mode => 'block_writes')")"
check "worker_copy_table_to_node called with a computed shard refused" "0A000" \
    "$(state $from_b "SELECT worker_copy_table_to_node(c.oid::regclass, 1) FROM pg_class c WHERE c.relname = 'pg_class'")"
q $W1 "CREATE DATABASE nofence" >/dev/null
"${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $W1 -U postgres -d nofence -X -q -c "CREATE EXTENSION citus" >/dev/null 2>&1
out=$("${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $W1 -U postgres -d nofence -X -q -At -v VERBOSITY=verbose \
    -c "SELECT worker_copy_table_to_node(c.oid::regclass, 1) FROM pg_class c WHERE c.relname = 'pg_class'" 2>&1)
check "a database with Citus and without fencing on a worker" "citus" \
    "$("${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $W1 -U postgres -d nofence -X -q -At -c "SELECT string_agg(extname, ',') FROM pg_extension WHERE extname IN ('citus', 'fencing')")"
check "… but not judged in a database without fencing (Citus answers itself)" "no" \
    "$(grep -q 'docs/citus.md' <<< "$out" && echo yes || echo no)"

# ---- tombstones while a shard is published (a logical move copying it)
# Two shards of bw without tombstones, and one key of each.
sh_p=$(q $C "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'bw'::regclass AND shardid NOT IN ($sh_b, $sh_c) ORDER BY shardid LIMIT 1")
sh_q=$(q $C "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'bw'::regclass AND shardid NOT IN ($sh_b, $sh_p) ORDER BY shardid LIMIT 1")
k_p=$(q $C "SELECT k FROM bw WHERE get_shard_id_for_distribution_column('bw', k) = $sh_p ORDER BY k LIMIT 1")
k_q=$(q $C "SELECT k FROM bw WHERE get_shard_id_for_distribution_column('bw', k) = $sh_q ORDER BY k LIMIT 1")
name_p=$(q $C "SELECT shard_name('bw'::regclass, $sh_p)")
port_p=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh_p")
# As a move publishes it (Citus would propagate a user's CREATE PUBLICATION).
q $port_p "SET citus.enable_ddl_propagation = off; CREATE PUBLICATION fencing_test_pub FOR TABLE $name_p" >/dev/null
check "a fenced DELETE on a shard in a publication (a logical move under way) refused" "0A000" \
    "$(state $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 50; DELETE FROM bw WHERE k = $k_p; COMMIT;")"
check "… no tombstone was written on the published shard" "0" \
    "$(q $port_p "SELECT count(*) FROM fencing.row_tombstone WHERE relid = '$name_p'::regclass")"
check "an UPDATE of the published shard still admitted (its HWM is in the row)" "ok" \
    "$(state $C "UPDATE bw SET v = 1, fence = 51 WHERE k = $k_p")"
q $port_p "SET citus.enable_ddl_propagation = off; DROP PUBLICATION fencing_test_pub" >/dev/null
check "the DELETE admitted once the publication is gone" "ok" \
    "$(state $C "SET citus.propagate_set_commands = 'local'; BEGIN; SET LOCAL fencing.token = 52; DELETE FROM bw WHERE k = $k_p; COMMIT;")"
# A DELETE in flight when the move publishes the shard: the publication waits
# for it and then sees its tombstone.
name_q=$(q $C "SELECT shard_name('bw'::regclass, $sh_q)")
port_q=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $sh_q")
"${RUN[@]}" "$BIN/psql" -h "$SOCK" -p "$port_q" -U postgres -X -q -At -v VERBOSITY=verbose \
    -c "BEGIN" -c "SET LOCAL fencing.token = 60" -c "DELETE FROM $name_q WHERE k = $k_q" -c "SELECT pg_sleep(2)" -c "COMMIT" \
    > "$BASE/inflight.out" 2>&1 &
inflight=$!
sleep 0.5
check "CREATE PUBLICATION of a shard waits for a DELETE in flight and refuses its tombstone" "0A000" \
    "$(state $port_q "SET citus.enable_ddl_propagation = off; CREATE PUBLICATION fencing_test_pub2 FOR TABLE $name_q")"
wait $inflight
check "… the in-flight DELETE committed its tombstone" "1" \
    "$(q $port_q "SELECT count(*) FROM fencing.row_tombstone WHERE relid = '$name_q'::regclass")"
# A reference table in resource scope: a lease fences its resource on the
# coordinator only, and a copy written directly on a worker would be judged
# by the worker's own, lower HWM (the attack pass had A's late token accepted
# there after B acquired): resource scope is refused on every copy.
q $C "SET fencing.auto_protect = off; CREATE TABLE rres (id int PRIMARY KEY, res text NOT NULL, fence fencing_token); SELECT create_reference_table('rres')" >/dev/null
name_r=$(q $C "SELECT shard_name('rres'::regclass, shardid) FROM pg_dist_shard WHERE logicalrelid = 'rres'::regclass")
for node in $W1 $W2; do
    check "reference table: resource scope refused on the copy on port $node" "0A000" \
        "$(state $node "SELECT fencing_protect('$name_r'::regclass, scope => 'resource', resource_column => 'res')")"
done
check "reference table: table scope allowed on a copy (every copy written in one transaction)" "ok" \
    "$(state $W1 "SELECT fencing_protect('$name_r'::regclass, scope => 'table')")"

# ---- a plain (non-Citus) table on a worker keeps its single-node behaviour
q $W1 "CREATE TABLE local_t (k int PRIMARY KEY, res text NOT NULL, fence fencing_token)" >/dev/null
check "resource scope on a worker's own local table allowed" "ok" \
    "$(state $W1 "SELECT fencing_protect('local_t', scope => 'resource', resource_column => 'res')")"

finish
