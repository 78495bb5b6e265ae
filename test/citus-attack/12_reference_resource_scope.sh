#!/bin/bash
# A reference table in resource scope (supported, docs/citus.md): leases on
# the coordinator. Holder A (token 1) writes; B acquires token 2 (the fence on
# acquire raises the coordinator's resource HWM only); A's late write with
# token 1 through the coordinator, and directly on a worker's placement.
. "$(dirname "$0")/lib.sh"
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
q $C "DROP TABLE IF EXISTS rres" >/dev/null
q $C "SET fencing.auto_protect = off; CREATE TABLE rres (id int PRIMARY KEY, res text NOT NULL, v int, fence fencing_token)" >/dev/null
q $C "SELECT create_reference_table('rres')" >/dev/null
say "placements (nodes)" "$(q $C "SELECT string_agg(nodeport::text, ',' ORDER BY nodeport) FROM citus_shards WHERE table_name = 'rres'::regclass")"
protected=$(q $C "SELECT string_agg(coalesce(nullif(result,''),'ok:'||success::text), ',' ORDER BY nodeid) FROM run_command_on_all_nodes(\$\$SELECT fencing_protect(c.oid::regclass, scope => 'resource', resource_column => 'res') FROM pg_class c WHERE relname ~ '^rres_[0-9]+\$'\$\$)")
say "resource scope on every placement" "$protected"
# Since 1.6 resource scope is refused on reference tables (fail closed): the
# placements keep whatever policy they had (none here, auto-protection off),
# so A's late writes below are not judged by a resource HWM and are not
# counted as stale acceptances; they are shown only.
judge=stale_if_ok
grep -q "resource scope is refused" <<< "$protected" && judge=say
rs=$(q $C "SELECT shard_name('rres'::regclass, shardid) FROM pg_dist_shard WHERE logicalrelid = 'rres'::regclass")
t1=$(q $C "SELECT fencing_acquire('r1', 'A', '30 s')")
say "A acquires r1 on the coordinator" "$t1"
say "A writes with token $t1 through the coordinator" "$(state $C "INSERT INTO rres VALUES (1, 'r1', 1, $t1)")"
q $C "SELECT fencing_release('r1', $t1)" >/dev/null
t2=$(q $C "SELECT fencing_acquire('r1', 'B', '30 s')")
say "B acquires r1 on the coordinator" "$t2"
$judge "A's late write, token $t1, through the coordinator (expect TF001)" "$(state $C "INSERT INTO rres VALUES (2, 'r1', 2, $t1)")"
$judge "A's late write, token $t1, directly on worker $W1's placement $rs (expect refusal)" "$(state $W1 "INSERT INTO $rs VALUES (3, 'r1', 3, $t1)")"
$judge "A's late UPDATE, token $t1, directly on worker $W2's placement" "$(state $W2 "UPDATE $rs SET v = 9, fence = $t1 WHERE id = 1")"
say "resource HWM of r1 on coordinator / w1 / w2" "$(q $C "SELECT string_agg(result, ' / ' ORDER BY nodeid) FROM run_command_on_all_nodes(\$\$SELECT coalesce(max(hwm)::text,'none') FROM fencing.resource_hwm\$\$)")"
summary
