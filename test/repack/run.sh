#!/usr/bin/env bash
# Online table rewrites (docs/online-rewrites.md) with Debian's pg_repack
# (postgresql-15-repack): nothing a rewrite of the extension's tables or of a
# protected table does may lower a high-water mark or reissue a token.
#
# 1. Deterministic: pg_repack -t of fencing.table_hwm, fencing.resource_hwm,
#    fencing.row_tombstone and fencing.lease, each stretched by a transaction
#    held open (pg_repack waits for every transaction older than its copy
#    before it swaps); once the copy exists, a raise commits (a fenced write,
#    fencing_advance, a DELETE, fencing_acquire). After the swap: the HWM read
#    back equals the raise, a write just below it is refused (TF001),
#    fenced_update returns 0 for it, and the next lease token is new.
# 2. Protected user tables repacked (-t) the same way, in every scope, with a
#    row moving to another resource and rows deleted during the copy.
# 3. test/repack/stress.py: whole-database pg_repack -d (several runs), -t,
#    -x, -i, VACUUM FULL and CLUSTER under raisers in every scope and a
#    leaser, with the commit order recorded and a stale probe after each run.
#
# Runs on a scratch cluster of its own (private port and socket; the server as
# the postgres user under root) with the installed extension and pg_repack.
# Prints "ok N - ..." lines; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source test/lib/checks.sh
# pg_repack from the same installation as the server (its client and its
# extension must be the same version).
PATH=$(pg_config --bindir):$PATH

WORK=$(mktemp -d /tmp/fencing-repack.XXXXXX)
chmod 755 "$WORK"
export FENCING_PGPORT=${FENCING_REPACK_PGPORT:-$((${FENCING_PGPORT:-54329} + 500))}
export FENCING_CLUSTER_DIR=$WORK/cluster
trap 'test/cluster.sh stop; rm -rf "$WORK"' EXIT
test/cluster.sh start || exit 1
eval "$(test/cluster.sh env)"
export PGDATABASE=fencing_repack
PGOPTIONS='-c client_min_messages=warning' psql -X -q -d postgres \
    -c "CREATE DATABASE $PGDATABASE" || exit 1

q() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1" 2>&1; }

psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || exit 1
CREATE EXTENSION fencing;
CREATE EXTENSION pg_repack;
\i test/repack/schema.sql
SQL

# stretched_repack DESCRIPTION RAISE_FUNCTION PG_REPACK_ARGS...: runs pg_repack
# with a transaction held open, so that it waits before its swap; once its copy
# of the (first) table exists, runs RAISE_FUNCTION; then lets pg_repack finish.
stretched_repack() {
    local what=$1 raise=$2
    shift 2
    local table=$2 oid
    oid=$(q "SELECT '$table'::regclass::oid")
    psql -X -q -c "SET application_name = 'repack_holder'" -c "BEGIN" \
        -c "SELECT txid_current()" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
    local holder=$!
    local i
    for i in $(seq 100); do
        [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'repack_holder'
                 AND backend_xid IS NOT NULL")" = 1 ] && break
        sleep 0.1
    done
    pg_repack -d "$PGDATABASE" "$@" >"$WORK/repack.out" 2>&1 &
    local repack=$!
    local copied=no
    for i in $(seq 300); do
        if [ "$(q "SELECT to_regclass('repack.table_$oid') IS NOT NULL
                      AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $oid
                                   AND tgname = 'repack_trigger')")" = t ]; then
            copied=yes
            break
        fi
        sleep 0.1
    done
    check "$what: pg_repack's copy of $table exists, its log trigger installed" yes $copied
    $raise
    local waiting=no
    kill -0 $repack 2>/dev/null && waiting=yes
    check "$what: the raise committed before pg_repack's swap" yes $waiting
    q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'repack_holder'" >/dev/null
    wait $holder 2>/dev/null
    wait $repack
    local rc=$?
    check "$what: pg_repack succeeds" "0 no error" \
        "$rc $(grep -q 'ERROR\|WARNING' "$WORK/repack.out" && echo error: "$(grep 'ERROR\|WARNING' "$WORK/repack.out" | head -2)" || echo no error)"
}

# stale_write TOKEN SQL: the SQLSTATE of SQL written with TOKEN, or "accepted".
stale_write() {
    local state
    state=$(sqlstate_of "BEGIN; SET LOCAL fencing.token = $1; $2; COMMIT;")
    echo "${state:-accepted}"
}

# raise_kept HWM_TABLE USER_TABLE HWM_QUERY ID: a raise to 200 of USER_TABLE's
# HWM (its row 1) during a repack of HWM_TABLE is kept: read back, and a write
# and a fenced_update (row ID) with 199 refused.
raise_row1() { q "BEGIN; SET LOCAL fencing.token = 200; UPDATE $RAISED SET v = v + 1 WHERE id = 1; COMMIT" >/dev/null; }
raise_kept() {
    local hwm_table=$1 table=$2 hwm=$3 id=$4
    RAISED=$table
    stretched_repack "pg_repack -t fencing.$hwm_table" raise_row1 -t "fencing.$hwm_table"
    check "$hwm_table repacked: the HWM read back is the raise" 200 "$(q "SELECT $hwm")"
    check "$hwm_table repacked: a write with 199 is refused" TF001 \
        "$(stale_write 199 "UPDATE $table SET v = -1 WHERE id = $id")"
    check "$hwm_table repacked: fenced_update with 199 returns 0" 0 \
        "$(q "SELECT fenced_update('$table', 199, '{\"id\": $id}', '{\"v\": -1}')")"
}

# ------------------------------------------------------------ 1. table_hwm
raise_kept table_hwm tt "fencing_high_water('tt')" 3

# Strict raise (fencing_advance) during a repack of table_hwm.
advance_table() { q "SELECT fencing_advance('tt', 300)" >/dev/null; }
stretched_repack "pg_repack -t fencing.table_hwm (fencing_advance)" advance_table -t fencing.table_hwm
check "table_hwm repacked: the table HWM read back is the advance" 300 "$(q "SELECT fencing_high_water('tt')")"
check "table_hwm repacked: a write with 299 is refused" TF001 "$(stale_write 299 "UPDATE tt SET v = -1 WHERE id = 2")"

# --------------------------------------------------------- 2. resource_hwm
raise_kept resource_hwm rs "fencing_resource_high_water('a')" 11
check "resource_hwm repacked: shard b kept its HWM" 100 "$(q "SELECT fencing_resource_high_water('b')")"

# A first write of a new resource during the copy (the INSERT ... ON CONFLICT path).
first_resource() { q "SELECT fencing_resource_advance('new-during-copy', 50)" >/dev/null; }
stretched_repack "pg_repack -t fencing.resource_hwm (first write)" first_resource -t fencing.resource_hwm
check "resource_hwm repacked: a resource first written during the copy keeps its HWM" 50 \
    "$(q "SELECT fencing_resource_high_water('new-during-copy')")"

# ------------------------------------------------------- 3. row_tombstone
delete_rows() {
    q "BEGIN; SET LOCAL fencing.token = 200; DELETE FROM rw WHERE id IN (1, 2); COMMIT" >/dev/null
    q "SELECT fencing_advance('rw', 250, '{\"id\": 2}')" >/dev/null
}
stretched_repack "pg_repack -t fencing.row_tombstone" delete_rows -t fencing.row_tombstone
check "row_tombstone repacked: the tombstones read back are the deletes and the advance" "200 250" \
    "$(q "SELECT fencing_high_water('rw', '{\"id\": 1}') || ' ' || fencing_high_water('rw', '{\"id\": 2}')")"
check "row_tombstone repacked: a re-insert with 199 is refused" TF001 \
    "$(stale_write 199 "INSERT INTO rw (id, v) VALUES (1, -1)")"
check "row_tombstone repacked: a re-insert with 249 is refused" TF001 \
    "$(stale_write 249 "INSERT INTO rw (id, v) VALUES (2, -1)")"

# --------------------------------------------------------------- 4. lease
acquire_twice() {
    local t
    for t in 1 2 3; do
        q "SELECT fencing_release('job-1', fencing_acquire('job-1', 'w$t', '1 minute'))" >/dev/null
    done
}
q "SELECT fencing_release('job-1', fencing_acquire('job-1', 'w0', '1 minute'))" >/dev/null
stretched_repack "pg_repack -t fencing.lease" acquire_twice -t fencing.lease
check "lease repacked: the next acquire issues a new token" 5 \
    "$(q "SELECT fencing_acquire('job-1', 'w4', '1 minute')")"
q "SELECT fencing_release('job-1', 5)" >/dev/null
stretched_repack "pg_repack -t fencing.resource_hwm (acquires)" acquire_twice -t fencing.resource_hwm
check "resource_hwm repacked during acquires: the resource HWM is the last token issued" 8 \
    "$(q "SELECT fencing_resource_high_water('job-1')")"
check "resource_hwm repacked during acquires: the next acquire issues a new token" 9 \
    "$(q "SELECT fencing_acquire('job-1', 'w9', '1 minute')")"

# ------------------------------------------- 5. protected user tables (-t)
# Each table's copy stretched in turn; writes in its scope during the copy,
# deletes included (replayed into pg_repack's copy without a token).
work_tables_fenced() {
    q "SELECT count(*) FROM fencing.protected WHERE relid::oid IN
         (SELECT oid FROM pg_class WHERE relnamespace = 'repack'::regnamespace)" >>"$WORK/fenced"
}
write_rs() {
    work_tables_fenced
    q "BEGIN; SET LOCAL fencing.token = 400; UPDATE rs SET v = v + 1 WHERE id = 5; DELETE FROM rs WHERE id = 9; COMMIT" >/dev/null
}
write_tt() {
    work_tables_fenced
    q "BEGIN; SET LOCAL fencing.token = 400; UPDATE tt SET v = v + 1 WHERE id = 5; DELETE FROM tt WHERE id = 9; COMMIT" >/dev/null
}
write_rw() {
    work_tables_fenced
    q "BEGIN; SET LOCAL fencing.token = 400; UPDATE rw SET v = v + 1 WHERE id = 5; DELETE FROM rw WHERE id = 6; COMMIT" >/dev/null
}
stretched_repack "pg_repack -t rs (resource scope)" write_rs -t rs
stretched_repack "pg_repack -t tt (table scope)" write_tt -t tt
stretched_repack "pg_repack -t rw (row scope)" write_rw -t rw
check "user tables repacked: pg_repack's copies were not fenced (auto-protection)" "0 0 0" \
    "$(tr '\n' ' ' <"$WORK/fenced" | sed 's/ $//')"
check "user tables repacked: the rows written during the copies" "401|400|0|0|0" \
    "$(q "SELECT (SELECT v + tok::bigint FROM rs WHERE id = 5) || '|' || (SELECT tok FROM rw WHERE id = 5)
           || '|' || (SELECT count(*) FROM rs WHERE id = 9) || '|' || (SELECT count(*) FROM tt WHERE id = 9)
           || '|' || (SELECT count(*) FROM rw WHERE id = 6)")"
check "user tables repacked: a resource write with 399 is refused" TF001 "$(stale_write 399 "UPDATE rs SET v = -1 WHERE id = 3")"
check "user tables repacked: a table write with 399 is refused" TF001 "$(stale_write 399 "UPDATE tt SET v = -1 WHERE id = 3")"
check "user tables repacked: a row write with 399 is refused" TF001 "$(stale_write 399 "UPDATE rw SET v = -1 WHERE id = 5")"
check "user tables repacked: a re-insert of the deleted row with 399 is refused" TF001 \
    "$(stale_write 399 "INSERT INTO rw (id, v) VALUES (6, -1)")"
check "user tables repacked: their policies are as before" "rs:resource rw:row tt:table" \
    "$(q "SELECT string_agg(relid::text || ':' || scope, ' ' ORDER BY relid::text) FROM fencing.protected")"

# --------------------------------------------- 6. rewrites under raisers
/usr/bin/python3 test/repack/stress.py >"$WORK/stress.out" 2>&1
rc=$?
while IFS= read -r line; do
    case $line in
    "ok "*) n=$((n + 1)) pass=$((pass + 1)); echo "ok $n - ${line#ok * - }" ;;
    "not ok "*) n=$((n + 1)) fail=$((fail + 1)); echo "not ok $n - ${line#not ok * - }" ;;
    *) echo "$line" ;;
    esac
done <"$WORK/stress.out"
check "the stress ran to its end" 0 $rc
finish
