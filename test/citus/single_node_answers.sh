#!/bin/bash
# fenced_update() and fenced_upsert() through a Citus coordinator give their
# single-node answers on distributed and reference tables: a stale token
# writes 0 rows (no error), a current one writes its row and token on the
# shard, and the caller's transaction goes on. A coordinator and two workers
# on loopback, started here from scratch. Not part of `make test`.
#
#   bash test/citus/single_node_answers.sh   ports CITUS_PORTS (default "54601 54602 54603")
#
# Exit status: 0 all passed, 1 a check failed, 77 Citus is not installed (no
# check ran: that is a skip, never a pass).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. test/lib/checks.sh

. test/citus/cluster.sh
skip_without_citus
citus_cluster "54601 54602 54603" CITUS_PORTS
citus_topology

# ---- a distributed table and a reference table, fenced row by row on their shards
q $C "CREATE TABLE inv (item text PRIMARY KEY, stock int CHECK (stock >= 0), fence fencing_token)" >/dev/null
q $C "SELECT fencing_distribute('inv', 'item')" >/dev/null
q $C "INSERT INTO inv VALUES ('a', 1, 10), ('b', 1, 30)" >/dev/null
q $C "CREATE TABLE ref (k int PRIMARY KEY, v text, fence fencing_token)" >/dev/null
q $C "SELECT fencing_distribute('ref')" >/dev/null
q $C "INSERT INTO ref VALUES (1, 'one', 10)" >/dev/null

for t in inv ref; do
    if [ $t = inv ]; then key="'{\"item\": \"a\"}'"; where="item = 'a'"; row='{"item": "n", "stock": 5}'; col=stock; val=7
    else key="'{\"k\": 1}'"; where="k = 1"; row='{"k": 2, "v": "two"}'; col=v; val='"seven"'; fi
    check "$t: fenced_update with a stale token writes 0 rows, no error" "0" \
        "$(q $C "SELECT fenced_update('$t', 9, $key, '{\"$col\": $val}')")"
    check "$t: the row keeps its token after the stale call" "10" \
        "$(q $C "SELECT fence FROM $t WHERE $where")"
    check "$t: fenced_update with a current token writes 1 row" "1" \
        "$(q $C "SELECT fenced_update('$t', 12, $key, '{\"$col\": $val}')")"
    check "$t: fenced_upsert of a new key writes 1 row" "1" "$(q $C "SELECT fenced_upsert('$t', 12, '$row')")"
    check "$t: fenced_upsert with a stale token writes 0 rows" "0" "$(q $C "SELECT fenced_upsert('$t', 11, '$row')")"
    check "$t: fenced_upsert with a current token writes 1 row" "1" "$(q $C "SELECT fenced_upsert('$t', 13, '$row')")"
    check "$t: fenced_update of an unknown column: 42703, unchanged" "42703" \
        "$(state $C "SELECT fenced_update('$t', 50, $key, '{\"nope\": 1}')")"
    check "$t: fenced_delete refused (0A000, fencing's)" "0A000" "$(state $C "SELECT fenced_delete('$t', 50, $key)")"
    check "$t: fenced_update_result refused (0A000, fencing's)" "0A000" \
        "$(state $C "SELECT fenced_update_result('$t', 50, $key, '{\"$col\": $val}')")"
done
check "inv: the shard row has the current token (read on the worker's placement)" "12" \
    "$(q $C "SELECT result FROM run_command_on_placements('inv', \$\$SELECT fence FROM %s WHERE item = 'a'\$\$) WHERE result <> ''")"
check "ref: every placement has the current token" "12,12,12" \
    "$(q $C "SELECT string_agg(result, ',') FROM run_command_on_placements('ref', \$\$SELECT fence FROM %s WHERE k = 1\$\$)")"
check "inv: the upserted row is on its shard with token 13" "13" \
    "$(q $C "SELECT result FROM run_command_on_placements('inv', \$\$SELECT fence FROM %s WHERE item = 'n'\$\$) WHERE result <> ''")"

# ---- inside one transaction: a stale answer leaves the transaction usable
check "BEGIN; stale call; current call; COMMIT: both answered, the transaction commits" "0|1|ok" \
    "$(q $C "BEGIN; SELECT fenced_update('inv', 5, '{\"item\": \"b\"}', '{\"stock\": 8}') || '|' || fenced_update('inv', 31, '{\"item\": \"b\"}', '{\"stock\": 9}') || '|ok'; COMMIT;")"
check "after the committed transaction the row has token 31 and stock 9" "31|9" \
    "$(q $C "SELECT fence || '|' || stock FROM inv WHERE item = 'b'")"
check "a multi-call transaction over two shards and the reference table commits" "1|1|1|0" \
    "$(q $C "BEGIN; SELECT fenced_update('inv', 40, '{\"item\": \"a\"}', '{\"stock\": 1}') || '|' || fenced_update('inv', 40, '{\"item\": \"b\"}', '{\"stock\": 1}') || '|' || fenced_update('ref', 40, '{\"k\": 1}', '{\"v\": \"x\"}') || '|' || fenced_update('ref', 39, '{\"k\": 1}', '{\"v\": \"y\"}'); COMMIT;")"
check "… its writes are there after COMMIT" "40|40|40|x" \
    "$(q $C "SELECT (SELECT fence FROM inv WHERE item = 'a') || '|' || (SELECT fence FROM inv WHERE item = 'b') || '|' || fence || '|' || v FROM ref WHERE k = 1")"
check "a stale call, then a plain stale UPDATE in the same transaction: TF001 as before" "TF001" \
    "$(state $C "BEGIN; SELECT fenced_update('inv', 5, '{\"item\": \"a\"}', '{\"stock\": 8}'); UPDATE inv SET stock = 2, fence = 6 WHERE item = 'a'; COMMIT;")"
check "a stale call inside a PL/pgSQL exception block that catches nothing: 0 rows, block goes on" "0" \
    "$(q $C "DO \$\$ DECLARE n bigint; BEGIN BEGIN n := fenced_update('inv', 5, '{\"item\": \"a\"}', '{\"stock\": 8}'); RAISE NOTICE '%', n; EXCEPTION WHEN division_by_zero THEN NULL; END; END \$\$; SELECT fenced_update('inv', 5, '{\"item\": \"a\"}', '{\"stock\": 8}')")"
check "a worker's CHECK violation comes back unchanged (23514)" "23514" \
    "$(state $C "SELECT fenced_update('inv', 41, '{\"item\": \"a\"}', '{\"stock\": -1}')")"
check "… and is caught by an enclosing exception block; the transaction goes on" "caught|40" \
    "$(q $C "DO \$\$ BEGIN PERFORM fenced_update('inv', 41, '{\"item\": \"a\"}', '{\"stock\": -1}'); EXCEPTION WHEN check_violation THEN RAISE NOTICE 'c'; END \$\$; SELECT 'caught|' || fence FROM inv WHERE item = 'a'")"
check "a token-less call (NULL token): 22004 as on one node, nothing routed" "22004" \
    "$(state $C "SELECT fenced_update('inv', NULL, '{\"item\": \"a\"}', '{\"stock\": 1}')")"
check "a worker's shell of the table refuses fenced_update (0A000, fencing's)" "0A000" \
    "$(state $W1 "SELECT fenced_update('inv', 50, '{\"item\": \"a\"}', '{\"stock\": 1}')")"
check "no error of the suite's calls became XX000" "0" \
    "$(grep -c XX000 "$BASE"/n$C.log)"
finish
