#!/bin/bash
# Leases on every node (tokens issued twice?), fencing_advance on workers,
# resource/table scope by every path, fencing_distribute misuse, and
# create_distributed_table of a fenced table with citus.enable_unsafe_triggers.
. "$(dirname "$0")/lib.sh"
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
# ---- leases: 10 rounds; a token returned by any node counts; refused ones do not
declare -A seen
for i in $(seq 1 10); do
    for p in $C $W1 $W2; do
        for f in "fencing_acquire('L', 'h$p-$i', '1 s')" "(fencing_acquire_all(ARRAY['L'], 'a$p-$i', '1 s'))[1]"; do
            t=$(q $p "SELECT $f")
            if [[ "$t" =~ ^[0-9]+$ ]]; then
                [ -n "${seen[$t]:-}" ] && TWICE=$((TWICE + 1))
                seen[$t]=$p
                q $p "SELECT fencing_release('L', $t)" >/dev/null
            fi
        done
    done
done
say "tokens issued for L (distinct) by node" "$(printf '%s\n' "${seen[@]}" | sort | uniq -c | tr '\n' ' ')"
for p in $W1 $W2; do
    say "worker $p: acquire / renew / release / check / resource_advance" \
        "$(state $p "SELECT fencing_acquire('L2','x','5 s')") $(state $p "SELECT fencing_renew('L',1,'5 s')") $(state $p "SELECT fencing_release('L',1)") $(state $p "SELECT fencing_check('L',1)") $(state $p "SELECT fencing_resource_advance('L', 999)")"
    say "worker $p: lease via a direct INSERT INTO fencing.lease (superuser)" "$(state $p "INSERT INTO fencing.lease SELECT * FROM fencing.lease LIMIT 0")"
done
# as a distributed function delegated to a worker
q $C "CREATE OR REPLACE FUNCTION acq(r text) RETURNS bigint LANGUAGE sql AS \$\$SELECT fencing_acquire(r, 'd', '5 s')\$\$" >/dev/null
q $C "SELECT create_distributed_function('acq(text)')" >/dev/null
t=$(q $C "SELECT acq('L')"); say "distributed function calling fencing_acquire (from the coordinator)" "$t"
[[ "$t" =~ ^[0-9]+$ ]] && { [ -n "${seen[$t]:-}" ] && TWICE=$((TWICE + 1)); seen[$t]=dfun; }
# ---- fencing_advance on workers / coordinator
q $C "DROP TABLE IF EXISTS adv" >/dev/null
q $C "SET fencing.auto_protect = off; CREATE TABLE adv (k text PRIMARY KEY, v int, fence fencing_token); SELECT create_distributed_table('adv', 'k', shard_count => 2)" >/dev/null
q $C "INSERT INTO adv VALUES ('a', 1, 10)" >/dev/null
sa=$(q $C "SELECT shard_name('adv'::regclass, get_shard_id_for_distribution_column('adv', 'a'))")
pa=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('adv', 'a')")
say "fencing_advance(coordinator's adv) / (shard on its worker)" "$(state $C "SELECT fencing_advance('adv', 50, '{\"k\": \"a\"}')") / $(state $pa "SELECT fencing_advance('$sa', 50, '{\"k\": \"a\"}')")"
say "fencing_advance on the coordinator via run_command_on_placements" "$(q $C "SELECT string_agg(success::text, ',') FROM run_command_on_placements('adv', \$\$SELECT fencing_advance('%s', 50, '{\"k\": \"zz\"}')\$\$)")"
# ---- scope by every path
say "fencing_protect(adv, resource) on the coordinator" "$(state $C "SELECT fencing_protect('adv', scope => 'table')")"
say "fencing_protect(shard, table) on the worker" "$(state $pa "SELECT fencing_protect('$sa', scope => 'table')")"
say "fencing_unprotect(shard) on the worker (owner: allowed?)" "$(state $pa "SELECT fencing_unprotect('$sa')")"
say "a stale write (9 < 10) on the unprotected shard, direct (by design: its owner unprotected it)" "$(state $pa "UPDATE $sa SET v = 2, fence = 9 WHERE k = 'a'")"
q $pa "SELECT fencing_protect('$sa')" >/dev/null
say "UPDATE fencing.protected SET scope = 'table' on the worker (superuser)" "$(state $pa "UPDATE fencing.protected SET scope = 'table' WHERE relid = '$sa'::regclass")"
say "a write on that shard (expect 0A000)" "$(state $C "UPDATE adv SET v = 3, fence = 11 WHERE k = 'a'")"
q $pa "UPDATE fencing.protected SET scope = 'row' WHERE relid = '$sa'::regclass" >/dev/null
say "ALTER TABLE adv DISABLE TRIGGER ALL on the coordinator (propagated?)" "$(state $C "ALTER TABLE adv DISABLE TRIGGER ALL")"
say "ALTER TABLE shard DISABLE TRIGGER ALL on the worker" "$(state $pa "ALTER TABLE $sa DISABLE TRIGGER ALL")"
stale_if_ok "a stale write (8) through the coordinator after that" "$(state $C "UPDATE adv SET v = 4, fence = 8 WHERE k = 'a'")"
q $pa "ALTER TABLE $sa ENABLE TRIGGER ALL" >/dev/null
# ---- create_distributed_table of a fenced table with enable_unsafe_triggers
q $C "DROP TABLE IF EXISTS ut" >/dev/null
q $C "CREATE TABLE ut (k int PRIMARY KEY, v int, fence fencing_token); INSERT INTO ut VALUES (1, 1, 10)" >/dev/null
say "create_distributed_table(fenced ut) with citus.enable_unsafe_triggers" "$(state $C "SET citus.enable_unsafe_triggers = on; SELECT create_distributed_table('ut', 'k')")"
say "ut distributed?" "$(q $C "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'ut'::regclass")"
stale_if_ok "stale write to ut (9 < 10)" "$(state $C "UPDATE ut SET v = 2, fence = 9 WHERE k = 1")"
# ---- fencing_distribute misuse
q $C "DROP TABLE IF EXISTS mt; DROP OWNED BY mallory" >/dev/null 2>&1
q $C "DROP ROLE IF EXISTS mallory; CREATE ROLE mallory LOGIN; GRANT ALL ON SCHEMA public TO mallory" >/dev/null
q $C "DROP TABLE IF EXISTS victim; CREATE TABLE victim (k int PRIMARY KEY, fence fencing_token); INSERT INTO victim VALUES (1, 10); GRANT ALL ON victim TO mallory" >/dev/null
say "non-owner (mallory, ALL privileges) fencing_distribute(victim)" "$(state $C "SELECT fencing_distribute('victim', 'k')" mallory)"
say "victim still protected" "$(q $C "SELECT count(*) FROM fencing_protected WHERE table_name = 'victim'::regclass")"
q $C "CREATE TABLE mt (k int PRIMARY KEY, fence fencing_token)" mallory >/dev/null
say "mallory: fencing_distribute(mt, colocate_with => 'adv') (not hers)" "$(state $C "SELECT fencing_distribute('mt', 'k', colocate_with => 'adv')" mallory)"
say "mallory: colocate_with => an injection string" "$(state $C "SELECT fencing_distribute('mt', 'k', colocate_with => 'adv''); DROP TABLE victim; --')" mallory)"
say "victim exists" "$(q $C "SELECT count(*) FROM pg_class WHERE relname = 'victim'")"
say "mallory: fencing_distribute(mt) with a distribution column that does not exist" "$(state $C "SELECT fencing_distribute('mt', 'nope')" mallory)"
say "mt still protected after the failed call" "$(q $C "SELECT count(*) FROM fencing_protected WHERE table_name = 'mt'::regclass")"
say "mallory: fencing_distribute(mt, 'k')" "$(state $C "SELECT fencing_distribute('mt', 'k')" mallory)"
say "mallory: fencing_distribute twice (already distributed)" "$(state $C "SELECT fencing_distribute('mt', 'k')" mallory)"
say "mallory: fencing_distribute on a worker" "$(state $W1 "SELECT fencing_distribute('mt', 'k')" mallory)"
say "SECURITY DEFINER functions new in 1.6 callable by PUBLIC" "$(q $C "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.prosecdef AND n.nspname IN ('fencing','public') AND has_function_privilege('mallory', p.oid, 'EXECUTE')")"
summary
