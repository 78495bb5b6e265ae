#!/bin/bash
# Moves (force_logical, block_writes) and rebalance_table_shards while a
# fenced writer raises tokens (11, 12, ... on 50 rows, through the coordinator)
# and a stale writer (token 5, below every row's) updates the same rows, in
# both the token column and SET LOCAL forms. Every stale ok counts; at the end
# each row holds the last token acknowledged for it.
. "$(dirname "$0")/lib.sh"
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
q $C "DROP TABLE IF EXISTS mw" >/dev/null
q $C "SET fencing.auto_protect = off; CREATE TABLE mw (k int PRIMARY KEY, v int, pad text, fence fencing_token); SELECT create_distributed_table('mw', 'k', shard_count => 4, colocate_with => 'none')" >/dev/null
q $C "INSERT INTO mw SELECT g, 0, repeat('p', 100), 10 FROM generate_series(1, 60000) g" >/dev/null
fresh=$BASE/fresh.sql; stale=$BASE/stale.sql; : > "$fresh"; : > "$stale"
for n in $(seq 11 2000); do
    k=$(( (n % 50) + 1 ))
    echo "UPDATE mw SET v = $n, fence = $n WHERE k = $k; \\echo $k $n" >> "$fresh"
    echo "UPDATE mw SET v = -1, fence = 5 WHERE k = $k; \\echo S $k" >> "$stale"
    echo "BEGIN; SET LOCAL fencing.token = 6; UPDATE mw SET v = -2 WHERE k = $k; COMMIT; \\echo L $k" >> "$stale"
done
export PGOPTIONS="-c citus.propagate_set_commands=local"
"${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $C -U postgres -X -q -At -v VERBOSITY=sqlstate -f "$fresh" > "$BASE/fresh.log" 2>&1 &
fp=$!
"${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $C -U postgres -X -q -At -v VERBOSITY=sqlstate -f "$stale" > "$BASE/stale.log" 2>&1 &
sp=$!
sh1=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = 'mw'::regclass AND nodeport = $W1 ORDER BY shardid LIMIT 1")
sh2=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = 'mw'::regclass AND nodeport = $W1 ORDER BY shardid OFFSET 1 LIMIT 1")
say "move $sh1 w1 -> w2 (force_logical) under writers" "$(state $C "SELECT citus_move_shard_placement($sh1, '127.0.0.1', $W1, '127.0.0.1', $W2, shard_transfer_mode => 'force_logical')")"
say "move $sh2 w1 -> w2 (block_writes) under writers" "$(state $C "SELECT citus_move_shard_placement($sh2, '127.0.0.1', $W1, '127.0.0.1', $W2, shard_transfer_mode => 'block_writes')")"
say "rebalance_table_shards(mw, force_logical) under writers" "$(state $C "SELECT rebalance_table_shards('mw', shard_transfer_mode => 'force_logical')")"
say "placements per node after" "$(q $C "SELECT string_agg(nodeport || ':' || n, ' ') FROM (SELECT nodeport, count(*) n FROM citus_shards WHERE table_name = 'mw'::regclass GROUP BY 1) s")"
wait $fp $sp
# \echo runs whether the statement failed or not: pair each echo with the error before it
ok_stale=$(awk '/ERROR/{bad=1; next} /^[SL] /{ if (!bad) n++; bad=0 } END{print n+0}' "$BASE/stale.log")
say "stale writer: statements / refused (codes)" "$(grep -c '^[SL] ' "$BASE/stale.log") / $(grep -o 'ERROR: *[0-9A-Z]*' "$BASE/stale.log" | sort | uniq -c | tr '\n' ' ')"
stale_if_ok "stale UPDATEs accepted: $ok_stale" "$([ "$ok_stale" = 0 ] && echo refused || echo ok)"
say "fresh writer: statements / errors (codes)" "$(grep -c '^[0-9]' "$BASE/fresh.log") / $(grep -o 'ERROR: *[0-9A-Z]*' "$BASE/fresh.log" | sort | uniq -c | tr '\n' ' ')"
say "rows with v < 0 (a stale write landed)" "$(q $C "SELECT count(*) FROM mw WHERE v < 0")"
# the last acknowledged token per key must be the row's
awk '/ERROR/{bad=1; next} /^[0-9]+ [0-9]+$/{ if (!bad) last[$1]=$2; bad=0 } END{for (k in last) print k, last[k]}' "$BASE/fresh.log" | sort -n > "$BASE/expect"
mism=0
while read -r k t; do
    [ "$(q $C "SELECT fence FROM mw WHERE k = $k")" = "$t" ] || mism=$((mism + 1))
done < "$BASE/expect"
say "rows whose token is not the last acknowledged one (of $(wc -l < "$BASE/expect"))" "$mism"
summary
