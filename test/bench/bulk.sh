#!/usr/bin/env bash
# make bench, bulk section: bulk statements on a fenced table against the same
# statement on the same table unfenced, in one run.
#
#   bash test/bench/bulk.sh                   ROWS=1000000 ROUNDS=5 (make bench)
#   ROWS=20000 ROUNDS=3 bash test/bench/bulk.sh   a quick check
#   BULK_PARTS=callgrind | wall               one part only
#   BULK_OPS="copy_row del_row"               some operations only
#   BULK_CG_KEEP=DIR                          keep the callgrind profiles
#
# Operations (each on a fenced table "f" and on the same table unprotected
# "u": id bigint PRIMARY KEY, res int, payload text, tok fencing_token):
#   copy_row, copy_res, copy_tab  COPY FROM a file of ROWS rows, each with its
#                                 token (5), into an empty table fenced in row,
#                                 resource (100 resources) or table scope
#   ins_row, ins_res, ins_tab     INSERT ... SELECT of ROWS new keys, token 5
#   upd_row, upd_res, upd_tab     one UPDATE of every row of ROWS (5 -> 6)
#   del_row                       a retention DELETE of every row (row scope,
#                                 under fencing.token 7: each row leaves its
#                                 tombstone)
#   truncate                      TRUNCATE of a ROWS-row row-scope table
#   drop_part, detach_part        DROP / DETACH of a ROWS-row partition of a
#                                 row-scope partitioned table
#   del_ret, truncate_ret,        the same four with the table's retirement
#   drop_ret, detach_ret          enabled (fencing_enable_retirement): removals
#                                 of more than 1000 rows fold into its floor
#   truncate_idx, drop_idx,       the last three with an index on the token
#   detach_idx                    column (both tables): the fold reads the
#                                 highest token from it, not from every row
#
# Two measurements:
#   1. callgrind (the one to decide on: the machine is shared, wall clock is
#      noisy): postgres --single runs one operation on a copy of a pristine
#      data directory, at CG_N1 and CG_N2 rows; instructions per row =
#      (Ir(CG_N2) - Ir(CG_N1)) / (CG_N2 - CG_N1), so start-up, planning and
#      the shut-down checkpoint's fixed part cancel out. Ratio fenced/unfenced.
#      Not for drop_part and detach_part: their tombstones are written by an
#      event trigger, and event triggers do not fire in single-user mode (they
#      write through the same TombstoneEveryRow as truncate).
#   2. wall clock: ROUNDS interleaved rounds on a running scratch server
#      (fsync off, synchronous_commit off), each round setting up both tables
#      afresh and timing f and u in alternating order; medians.
# Results: a table on stdout and test/bench/bulk_results.txt (gitignored).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-5}
CG_N1=${CG_N1:-2000}
CG_N2=${CG_N2:-4000}
JOBS=${BENCH_JOBS:-2}
PARTS=${BULK_PARTS:-callgrind wall}
ALL_OPS=(copy_row copy_res copy_tab ins_row ins_res ins_tab upd_row upd_res upd_tab del_row truncate drop_part detach_part
         del_ret truncate_ret drop_ret detach_ret truncate_idx drop_idx detach_idx)
read -r -a OPS <<<"${BULK_OPS:-${ALL_OPS[*]}}"
CG_OPS=()
for op in "${OPS[@]}"; do
    case $op in drop_* | detach_*) ;; *) CG_OPS+=("$op") ;; esac
done
# Its own server, beside the other benches': the port after run.sh's.
export FENCING_PGPORT=$((${FENCING_PGPORT:-54369} + 2))
export FENCING_CLUSTER_DIR=${BULK_CLUSTER_DIR:-/tmp/fencing-bulk-bench-$FENCING_PGPORT}
PGBIN=$("${PG_CONFIG:-pg_config}" --bindir)
export PATH=$PGBIN:$PATH
SETTINGS=(-c fsync=off -c synchronous_commit=off -c jit=off -c max_wal_size=4GB
          -c checkpoint_timeout=1d)
RESULTS=$REPO/test/bench/bulk_results.txt

as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
for tool in valgrind psql; do
    command -v "$tool" >/dev/null || { echo "bulk: $tool not found (make deps)" >&2; exit 2; }
done

# ---------------------------------------------------------------------------
# The operations: setup_sql OP VARIANT TABLE N, op_sql OP TABLE N SRC.
# ---------------------------------------------------------------------------
scope_of() {
    case $1 in *_res) echo resource ;; *_tab) echo table ;; *) echo row ;; esac
}
loaded() {  # whether the operation starts from N rows
    case $1 in copy_* | ins_*) return 1 ;; *) return 0 ;; esac
}
setup_sql() {
    local op=$1 v=$2 t=$3 n=$4 scope
    scope=$(scope_of "$op")
    echo "SET fencing.auto_protect = off;"
    # A DETACH of an earlier round left its partition behind.
    echo "DROP TABLE IF EXISTS $t, ${t}_1 CASCADE;"
    local cols="(id bigint PRIMARY KEY, res int NOT NULL, payload text, tok fencing_token)"
    case $op in
        drop_* | detach_*)
            echo "CREATE TABLE $t $cols PARTITION BY RANGE (id);"
            echo "CREATE TABLE ${t}_1 PARTITION OF $t FOR VALUES FROM (1) TO ($((n + 1)));"
            echo "CREATE TABLE ${t}_2 PARTITION OF $t FOR VALUES FROM ($((n + 1))) TO (MAXVALUE);"
            ;;
        *) echo "CREATE TABLE $t $cols;" ;;
    esac
    case $op in *_idx) echo "CREATE INDEX ON $t (tok);" ;; esac
    loaded "$op" &&
        echo "INSERT INTO $t SELECT g, g % 100, 'payload', 5 FROM generate_series(1, $n) g;"
    if [ "$v" = f ]; then
        case $scope in
            row) echo "SELECT fencing_protect('$t');"
                 case $op in *_ret | *_idx) echo "SELECT fencing_enable_retirement('$t'::regclass);" ;; esac ;;
            table) echo "SELECT fencing_protect('$t', scope => 'table');" ;;
            resource) echo "SELECT fencing_protect('$t', scope => 'resource', resource_column => 'res', resource_namespace => '$t');" ;;
        esac
    fi
    echo "RESET fencing.auto_protect;"
}
op_sql() {
    local op=$1 t=$2 n=$3 src=$4
    case $op in
        copy_*) echo "COPY $t FROM '$src' (FORMAT csv);" ;;
        ins_*) echo "INSERT INTO $t SELECT g, g % 100, 'payload', 5 FROM generate_series(1, $n) g;" ;;
        upd_*) echo "UPDATE $t SET tok = 6, payload = 'updated';" ;;
        del_row | del_ret) echo "BEGIN; SET LOCAL fencing.token = 7; DELETE FROM $t WHERE id <= $n; COMMIT;" ;;
        truncate*) echo "TRUNCATE $t;" ;;
        drop_*) echo "DROP TABLE ${t}_1;" ;;
        detach_*) echo "ALTER TABLE $t DETACH PARTITION ${t}_1;" ;;
    esac
}
src_sql() {  # the COPY source of n rows
    echo "COPY (SELECT g, g % 100, 'payload', 5 FROM generate_series(1, $1) g) TO '$2' (FORMAT csv);"
}

make -s >/dev/null && make -s install >/dev/null
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -c "ALTER SYSTEM SET fsync = off" -c "ALTER SYSTEM SET synchronous_commit = off" \
    -c "ALTER SYSTEM SET max_wal_size = '4GB'" -c "ALTER SYSTEM SET checkpoint_timeout = '1d'" \
    -c "SELECT pg_reload_conf()" >/dev/null
WORK=$FENCING_CLUSTER_DIR/work
mkdir -p "$WORK"
chmod 777 "$WORK"
{
    echo "# fencing bulk bench $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src sql 2>/dev/null || echo '+dirty')"
    echo "# postgres $("$PGBIN/postgres" --version | awk '{print $3}'); rows=$ROWS rounds=$ROUNDS cg_n1=$CG_N1 cg_n2=$CG_N2"
} >"$RESULTS"

declare -A IR WALL
# ---------------------------------------------------------------------------
# 1. callgrind: a database per size holding every table, then copies.
# ---------------------------------------------------------------------------
cg_run() {  # cg_run OP VARIANT N
    local op=$1 v=$2 n=$3 dir=$WORK/cg/$1-$2-$3
    mkdir -p "$dir"
    chown postgres: "$dir" 2>/dev/null || true
    as_server_user cp -a "$FENCING_CLUSTER_DIR/data" "$dir/data"
    rm -f "$dir/data/postmaster.pid"
    op_sql "$op" "b_${op}_$v" "$n" "$WORK/src_$n.csv" >"$dir/script.sql"
    local rc=0
    as_server_user nice valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
        "$PGBIN/postgres" --single -D "$dir/data" "${SETTINGS[@]}" "bulk_$n" \
        <"$dir/script.sql" >"$dir/stdout" 2>"$dir/stderr" || rc=$?
    as_server_user rm -rf "$dir/data"
    if [ "$rc" != 0 ] || grep -q ERROR "$dir/stdout" "$dir/stderr"; then
        echo "   $op $v N=$n: FAILED (see $dir)" >&2
        return 1
    fi
    awk '/^(summary|totals):/ { print $2; exit }' "$dir/callgrind.out" >"$dir/ir"
    # The profiles outlive the scratch cluster when asked (callgrind_annotate).
    if [ -n "${BULK_CG_KEEP:-}" ]; then
        mkdir -p "$BULK_CG_KEEP"
        cp "$dir/callgrind.out" "$BULK_CG_KEEP/$op-$v-$n.callgrind"
    fi
}
if [[ " $PARTS " == *" callgrind "* ]]; then
    echo "== callgrind: ${#CG_OPS[@]} operations x {fenced, unfenced} x N=$CG_N1,$CG_N2"
    for n in "$CG_N1" "$CG_N2"; do
        psql -X -q -c "CREATE DATABASE bulk_$n"
        {
            echo "CREATE EXTENSION fencing;"
            src_sql "$n" "$WORK/src_$n.csv"
            for op in "${CG_OPS[@]}"; do
                for v in f u; do setup_sql "$op" "$v" "b_${op}_$v" "$n"; done
            done
            echo "VACUUM ANALYZE;"
        } | psql -X -q -v ON_ERROR_STOP=1 -d "bulk_$n" >/dev/null
    done
    psql -X -q -c CHECKPOINT
    as_server_user pg_ctl -D "$FENCING_CLUSTER_DIR/data" -m fast -w stop >/dev/null
    start=$SECONDS
    set -m
    for op in "${CG_OPS[@]}"; do
        for v in f u; do
            for n in "$CG_N1" "$CG_N2"; do
                while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
                cg_run "$op" "$v" "$n" &
            done
        done
    done
    wait || true
    set +m
    echo "   ($((SECONDS - start)) s)"
    for op in "${CG_OPS[@]}"; do
        for v in f u; do
            a=$(cat "$WORK/cg/$op-$v-$CG_N1/ir" 2>/dev/null || true)
            b=$(cat "$WORK/cg/$op-$v-$CG_N2/ir" 2>/dev/null || true)
            [ -n "$a" ] && [ -n "$b" ] && IR[$op-$v]=$(((b - a) / (CG_N2 - CG_N1)))
        done
    done
    as_server_user pg_ctl -D "$FENCING_CLUSTER_DIR/data" -l "$FENCING_CLUSTER_DIR/server.log" -w start >/dev/null
fi

# ---------------------------------------------------------------------------
# 2. Wall clock: interleaved rounds, medians.
# ---------------------------------------------------------------------------
timed() {  # timed SQL -> milliseconds
    psql -X -q -v ON_ERROR_STOP=1 -d bulk_wall -c '\timing on' -c "$1" |
        awk '/^Time: / { print $2; exit }'
}
median() {
    tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
if [[ " $PARTS " == *" wall "* ]]; then
    echo "== wall clock: ${#OPS[@]} operations, $ROWS rows, $ROUNDS interleaved rounds"
    psql -X -q -c "CREATE DATABASE bulk_wall"
    { echo "CREATE EXTENSION fencing;"; src_sql "$ROWS" "$WORK/src_wall.csv"; } |
        psql -X -q -v ON_ERROR_STOP=1 -d bulk_wall >/dev/null
    declare -A TIMES
    for ((round = 1; round <= ROUNDS; round++)); do
        for op in "${OPS[@]}"; do
            order="f u"
            [ $((round % 2)) = 0 ] && order="u f"
            for v in f u; do
                setup_sql "$op" "$v" "b_${op}_$v" "$ROWS" | psql -X -q -v ON_ERROR_STOP=1 -d bulk_wall >/dev/null
            done
            psql -X -q -d bulk_wall -c "VACUUM ANALYZE" -c CHECKPOINT
            for v in $order; do
                ms=$(timed "$(op_sql "$op" "b_${op}_$v" "$ROWS" "$WORK/src_wall.csv")")
                TIMES[$op-$v]="${TIMES[$op-$v]:-} $ms"
            done
            # Tombstones of this round's table go: the next round's start
            # from the same state.
            psql -X -q -d bulk_wall -c "DROP TABLE b_${op}_f, b_${op}_u CASCADE" \
                -c "DELETE FROM fencing.row_tombstone" -c "VACUUM fencing.row_tombstone" \
                -c "DELETE FROM fencing.tombstone_floor" >/dev/null
        done
        echo "   round $round done"
    done
    for op in "${OPS[@]}"; do
        for v in f u; do WALL[$op-$v]=$(echo "${TIMES[$op-$v]}" | median); done
        echo "wall op=$op times_f=${TIMES[$op-f]# } times_u=${TIMES[$op-u]# }" >>"$RESULTS"
    done
fi

# ---------------------------------------------------------------------------
# 3. Report.
# ---------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
echo
echo "Bulk statements, fenced vs the same table unfenced"
echo "Ir/row: callgrind, (Ir(N=$CG_N2) - Ir(N=$CG_N1)) / $((CG_N2 - CG_N1)), postgres --single"
echo "wall: median of $ROUNDS interleaved rounds, $ROWS rows, fsync off (noisy on a shared machine)"
printf '%-12s %12s %12s %7s %11s %11s %7s\n' operation "Ir/row f" "Ir/row u" ratio "wall f ms" "wall u ms" ratio
for op in "${OPS[@]}"; do
    f=${IR[$op-f]:-}; u=${IR[$op-u]:-}; wf=${WALL[$op-f]:-}; wu=${WALL[$op-u]:-}
    printf '%-12s %12s %12s %7s %11s %11s %7s\n' "$op" "${f:--}" "${u:--}" "$(ratio "$f" "$u")" \
        "${wf:--}" "${wu:--}" "$(ratio "$wf" "$wu")"
    echo "op=$op ir_f=${f:--} ir_u=${u:--} ir_ratio=$(ratio "$f" "$u") wall_f_ms=${wf:--} wall_u_ms=${wu:--} wall_ratio=$(ratio "$wf" "$wu")" >>"$RESULTS"
done
echo "results: ${RESULTS#"$REPO"/}"
