#!/bin/bash
# A worker killed (kill -9, postmaster and backends) while multi-shard fenced
# UPDATEs (tokens 11, 12, ...) commit with two-phase commit; restart, 2PC
# recovery, then: every row at one token, and stale writes below it refused.
. "$(dirname "$0")/lib.sh"
[ "${ATK_REUSE:-}" = 1 ] || start_cluster
q $C "DROP TABLE IF EXISTS kt" >/dev/null
q $C "SET fencing.auto_protect = off; CREATE TABLE kt (k int PRIMARY KEY, v int, fence fencing_token); SELECT create_distributed_table('kt', 'k', shard_count => 8)" >/dev/null
q $C "INSERT INTO kt SELECT g, 0, 10 FROM generate_series(1, 400) g" >/dev/null
sql=$BASE/kt.sql; : > "$sql"
for n in $(seq 11 400); do echo "UPDATE kt SET v = v + 1, fence = $n; \\echo $n" >> "$sql"; done
"${RUN[@]}" "$BIN/psql" -h "$SOCK" -p $C -U postgres -X -q -At -f "$sql" > "$BASE/kt.log" 2>&1 &
wpid=$!
sleep 1.5
pm=$(head -1 "$BASE/n$W2/postmaster.pid")
kids=$(pgrep -P "$pm" | tr '\n' ' ')
kill -9 "$pm" $kids 2>/dev/null
say "killed worker $W2 (postmaster $pm and its backends) after echo" "$(grep -c '^[0-9]' "$BASE/kt.log") statements"
sleep 2
kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
say "errors seen by the writer" "$(grep -o 'ERROR: .*' "$BASE/kt.log" | sort | uniq -c | head -3 | tr '\n' ';')"
"${RUN[@]}" "$BIN/pg_ctl" -D "$BASE/n$W2" -l "$BASE/n$W2.log" -w start >/dev/null
say "prepared transactions on w1 / w2 after restart" "$(q $W1 "SELECT count(*) FROM pg_prepared_xacts") / $(q $W2 "SELECT count(*) FROM pg_prepared_xacts")"
say "recover_prepared_transactions() on the coordinator" "$(q $C "SELECT recover_prepared_transactions()")"
say "prepared transactions on w1 / w2 after recovery" "$(q $W1 "SELECT count(*) FROM pg_prepared_xacts") / $(q $W2 "SELECT count(*) FROM pg_prepared_xacts")"
last_ok=$(awk '/ERROR/{exit} /^[0-9]+$/{n=$1} END{print n}' "$BASE/kt.log")
say "distinct (fence, v) over the 400 rows (expect 1)" "$(q $C "SELECT count(DISTINCT (fence, v)) FROM kt") : $(q $C "SELECT string_agg(DISTINCT fence::text, ',') FROM kt") (last acknowledged $last_ok)"
top=$(q $C "SELECT max(fence) FROM kt")
stale_if_ok "multi-shard UPDATE with token $((top - 1))" "$(state $C "UPDATE kt SET v = -1, fence = $((top - 1))")"
acc=0
for k in $(seq 1 40); do
    [ "$(state $C "UPDATE kt SET v = -1, fence = $((top - 1)) WHERE k = $k")" = ok ] && acc=$((acc + 1))
done
say "single-row stale UPDATEs (token $((top - 1))) accepted" "$acc of 40"
STALE=$((STALE + acc))
say "a current write (token $((top + 1))) admitted" "$(state $C "UPDATE kt SET v = 1, fence = $((top + 1))")"
summary
