#!/usr/bin/env bash
# make bench: instruction counts (callgrind Ir) per single-row write, for a
# fenced write and the alternatives it competes with.
#
# Method
#   1. Build and install the extension.
#   2. A scratch cluster (test/cluster.sh, port $FENCING_PGPORT, default 54369,
#      in its own directory) gets every table through the normal server, so
#      event triggers (auto-protection) fire: CREATE EXTENSION, ROWS rows per
#      table, VACUUM ANALYZE, CHECKPOINT. Then the server is stopped: that data
#      directory is the pristine copy.
#   3. Each (variant, N) run gets its own copy of the pristine data directory
#      and runs `postgres --single` under callgrind with a script on stdin:
#      PREPARE, then N EXECUTE lines (each its own autocommitted transaction),
#      then one check query. Two runs at a time (BENCH_JOBS).
#   4. Per-write cost = (Ir(N2) - Ir(N1)) / (N2 - N1): start-up, catalog
#      loading, planning, plan caching and the check query cancel out.
#
# Workload (the same for every variant)
#   Tables: id int PRIMARY KEY, shard int (= id % SHARDS), val int, tok
#   (bigint, or fencing_token on protected tables); ROWS rows, val 0, tok 1;
#   fillfactor 50 so that updates stay HOT on every table (the HWM tables,
#   fencing.resource_hwm and the PL/pgSQL one, keep the default).
#   Execution i writes row id = ((i-1) % ROWS) + 1 and sets val to the number
#   of times that row was written (val + 1). The defaults N1 = ROWS and
#   N2 = 2*ROWS make the measured window exactly one more write to every row,
#   after every row, page, plan and cache was touched once.
#   Token: the same token (5, above the initial 1) every time, non-strict
#   policies, so every write is admitted (and the check query proves it).
#   Parameters are written as a client sends them: the row id as an integer
#   literal, the token and JSON as quoted literals read by the parameter
#   type's input function (an unquoted 5 for a bigint parameter would add a
#   cast that EXECUTE plans on every call).
#
# Output: a table on stdout, machine-readable lines in test/bench/results.txt,
# and per-write inclusive function costs of the row-fenced and fenced_update()
# variants in test/bench/hotspots.txt (both are gitignored). Targets print
# PASS or MISS; the script exits non-zero only when the bench itself broke.
#
# Knobs: BENCH_N1, BENCH_N2, BENCH_ROWS, BENCH_JOBS, BENCH_VARIANTS (names),
# BENCH_KEEP=1 keeps the work directory, FENCING_PGPORT, and BENCH_SETUP_SQL:
# SQL run at the end of the setup, for what-if runs (it is printed, and
# recorded in results.txt). PG_CONFIG: the server to measure (default: the
# pg_config on PATH, Debian's 15); with it set, the extension is built in a
# copy of the checkout (test/matrix/lib.sh) so that the worktree's objects stay
# those of the default server, and that server's binaries come first on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
BENCH_DIR=$REPO/test/bench

ROWS=${BENCH_ROWS:-1000}
SHARDS=10
TOKEN=5
N1=${BENCH_N1:-$ROWS}
N2=${BENCH_N2:-$((2 * ROWS))}
JOBS=${BENCH_JOBS:-2}
export FENCING_PGPORT=${FENCING_PGPORT:-54369}
PGBIN=$("${PG_CONFIG:-pg_config}" --bindir)
# test/cluster.sh, psql and pg_ctl: the measured server's.
export PATH=$PGBIN:$PATH
DB=fencing_bench
# The same for every variant; single-user mode runs no autovacuum, no
# checkpointer and no background writer anyway.
SETTINGS=(-c fsync=off -c synchronous_commit=off -c jit=off -c huge_pages=off
          -c max_wal_size=4GB -c checkpoint_timeout=1d)

[ "$N2" -gt "$N1" ] || { echo "bench: BENCH_N2 must be above BENCH_N1" >&2; exit 2; }

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

for tool in valgrind callgrind_annotate psql; do
    command -v "$tool" >/dev/null || { echo "bench: $tool not found (make deps)" >&2; exit 2; }
done

# ---------------------------------------------------------------------------
# Variants: name | prepared statement | EXECUTE template ({ID}, {CYCLE})
# | 1 if the statement writes the token column.
# ---------------------------------------------------------------------------
declare -A V_TABLE V_PREPARE V_EXEC V_TITLE V_SETTINGS
ALL_VARIANTS=(plain plaintok tokunprot ctrig ctrigtok row rowstats rownostats resource resstats resrise resriseon fupdate handcond transparent txunprot plpgrow plpgres)

V_TITLE[plain]="1 plain UPDATE (unprotected)"
V_TABLE[plain]=plain
V_PREPARE[plain]='PREPARE p(int) AS UPDATE plain SET val = val + 1 WHERE id = $1'
V_EXEC[plain]='EXECUTE p({ID})'

# Two references that split the row-fenced cost: the same statement on
# unprotected tables, with a bigint and with a fencing_token column.
V_TITLE[plaintok]="1b plain, row-fenced shape (SET tok = \$2, bigint)"
V_TABLE[plaintok]=plain_tok
V_PREPARE[plaintok]='PREPARE p(int, bigint) AS UPDATE plain_tok SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[plaintok]="EXECUTE p({ID}, '$TOKEN')"

V_TITLE[tokunprot]="1c plain, row-fenced shape, fencing_token column"
V_TABLE[tokunprot]=tok_unprot
V_PREPARE[tokunprot]='PREPARE p(int, fencing_token) AS UPDATE tok_unprot SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[tokunprot]="EXECUTE p({ID}, '$TOKEN')"

V_TITLE[ctrig]="2 C trigger floor (suppress_redundant_updates_trigger)"
V_TABLE[ctrig]=ctrig
V_PREPARE[ctrig]='PREPARE p(int) AS UPDATE ctrig SET val = val + 1 WHERE id = $1'
V_EXEC[ctrig]='EXECUTE p({ID})'

# The same C trigger on the row-fenced statement shape: the floor for 3.
V_TITLE[ctrigtok]="2b C trigger floor, row-fenced shape"
V_TABLE[ctrigtok]=ctrig_tok
V_PREPARE[ctrigtok]='PREPARE p(int, fencing_token) AS UPDATE ctrig_tok SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[ctrigtok]="EXECUTE p({ID}, '$TOKEN')"

V_TITLE[row]="3 row-fenced UPDATE (fencing guard, row scope)"
V_TABLE[row]=fenced
V_PREPARE[row]='PREPARE p(int, fencing_token) AS UPDATE fenced SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[row]="EXECUTE p({ID}, '$TOKEN')"

# The same write with the counters (pg/base/stats.hpp): the library preloaded,
# fencing.track_stats on (the default) and off.
V_TITLE[rowstats]="3s row-fenced, counters on (preloaded)"
V_TABLE[rowstats]=fenced
V_PREPARE[rowstats]=${V_PREPARE[row]}
V_EXEC[rowstats]=${V_EXEC[row]}
V_SETTINGS[rowstats]="-c shared_preload_libraries=fencing"
V_TITLE[rownostats]="3o row-fenced, preloaded, fencing.track_stats = off"
V_TABLE[rownostats]=fenced
V_PREPARE[rownostats]=${V_PREPARE[row]}
V_EXEC[rownostats]=${V_EXEC[row]}
V_SETTINGS[rownostats]="-c shared_preload_libraries=fencing -c fencing.track_stats=off"

V_TITLE[resource]="4 resource-fenced UPDATE (fencing guard, resource scope)"
V_TABLE[resource]=res_t
V_PREPARE[resource]='PREPARE p(int, fencing_token) AS UPDATE res_t SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[resource]="EXECUTE p({ID}, '$TOKEN')"

# The same with the counters on: a resource-scope write counts for its table
# and for its namespace.
V_TITLE[resstats]="4s resource-fenced, counters on (preloaded)"
V_TABLE[resstats]=res_t
V_PREPARE[resstats]=${V_PREPARE[resource]}
V_EXEC[resstats]=${V_EXEC[resource]}
V_SETTINGS[resstats]="-c shared_preload_libraries=fencing"

# Every write raises its resource's HWM (a rising token per write).
V_TITLE[resrise]="4b resource-fenced UPDATE, token rising every write"
V_TABLE[resrise]=res_rise
V_PREPARE[resrise]='PREPARE p(int, fencing_token) AS UPDATE res_rise SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[resrise]="EXECUTE p({ID}, '{RISING}')"

# The same under synchronous_commit = on (the default): a raising commit then
# needs no forced synchronous_commit (pg/hwm/durability.cpp sets it LOCAL to 'on'
# when the session runs with it off, as every other variant here does).
V_TITLE[resriseon]="4r resource-fenced, rising, synchronous_commit = on"
V_TABLE[resriseon]=res_rise
V_PREPARE[resriseon]=${V_PREPARE[resrise]}
V_EXEC[resriseon]=${V_EXEC[resrise]}
V_SETTINGS[resriseon]="-c synchronous_commit=on"

V_TITLE[fupdate]="5 fenced_update() (jsonb key/changes parameters)"
V_TABLE[fupdate]=fenced2
V_PREPARE[fupdate]='PREPARE p(fencing_token, jsonb, jsonb) AS SELECT fenced_update('"'fenced2'"'::regclass, $1, $2, $3)'
V_EXEC[fupdate]="EXECUTE p('$TOKEN', '{\"id\": {ID}}', '{\"val\": {CYCLE}}')"

V_TITLE[handcond]="6 hand-written conditional UPDATE (tok <= \$2)"
V_TABLE[handcond]=plain2
V_PREPARE[handcond]='PREPARE p(int, bigint) AS UPDATE plain2 SET val = val + 1, tok = $2 WHERE id = $1 AND tok <= $2'
V_EXEC[handcond]="EXECUTE p({ID}, '$TOKEN')"

# Transparent mode: an unchanged UPDATE (the token column not named) under
# SET LOCAL fencing.token, against the same transaction on an unprotected
# table of the same shape (the SET LOCAL included: only the guard differs).
# Each write is its own BEGIN; SET LOCAL; EXECUTE; COMMIT.
V_TITLE[transparent]="9 transparent mode (SET LOCAL fencing.token + UPDATE)"
V_TABLE[transparent]=transp
V_PREPARE[transparent]='PREPARE p(int) AS UPDATE transp SET val = val + 1 WHERE id = $1'
V_EXEC[transparent]=$'BEGIN\nSET LOCAL fencing.token = \'5\'\nEXECUTE p({ID})\nCOMMIT'
V_TITLE[txunprot]="9u the same transaction, unprotected table"
V_TABLE[txunprot]=transp_unprot
V_PREPARE[txunprot]='PREPARE p(int) AS UPDATE transp_unprot SET val = val + 1 WHERE id = $1'
V_EXEC[txunprot]=${V_EXEC[transparent]}

V_TITLE[plpgrow]="7 PL/pgSQL trigger, row check"
V_TABLE[plpgrow]=plpg_row
V_PREPARE[plpgrow]='PREPARE p(int, bigint) AS UPDATE plpg_row SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[plpgrow]="EXECUTE p({ID}, '$TOKEN')"

V_TITLE[plpgres]="8 PL/pgSQL trigger, resource HWM table"
V_TABLE[plpgres]=plpg_res
V_PREPARE[plpgres]='PREPARE p(int, bigint) AS UPDATE plpg_res SET val = val + 1, tok = $2 WHERE id = $1'
V_EXEC[plpgres]="EXECUTE p({ID}, '$TOKEN')"

declare -A V_SETS_TOKEN=([plain]=0 [plaintok]=1 [tokunprot]=1 [ctrig]=0 [ctrigtok]=1 [row]=1 [rowstats]=1 [rownostats]=1 [resource]=1 [resstats]=1 [resrise]=1 [resriseon]=1 [fupdate]=1 [handcond]=1
                         [transparent]=1 [txunprot]=0
                         [plpgrow]=1 [plpgres]=1)

read -r -a VARIANTS <<<"${BENCH_VARIANTS:-${ALL_VARIANTS[*]}}"
for v in "${VARIANTS[@]}"; do
    [ -n "${V_TABLE[$v]:-}" ] || { echo "bench: unknown variant $v" >&2; exit 2; }
done

# ---------------------------------------------------------------------------
# Work directory and cleanup.
# ---------------------------------------------------------------------------
WORK=$(mktemp -d /tmp/fencing-bench.XXXXXX)
chmod 755 "$WORK"
[ "$(id -u)" = 0 ] && chown postgres: "$WORK"
export FENCING_CLUSTER_DIR=$WORK/cluster
PIDS=()
cleanup() {
    local pid
    # Each run is its own process group (set -m below): end the runs we started.
    for pid in "${PIDS[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    test/cluster.sh stop >/dev/null 2>&1 || true
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "bench: work directory kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
# 1. Build and install.
# ---------------------------------------------------------------------------
echo "== build and install"
if [ -n "${PG_CONFIG:-}" ]; then
    source test/matrix/lib.sh
    mkdir "$WORK/ext"
    install_extension "$PG_CONFIG" "$WORK/ext" || { echo "bench: the build against $PG_CONFIG failed" >&2; exit 2; }
else
    make -s >/dev/null
    $SUDO make -s install >/dev/null
fi

# ---------------------------------------------------------------------------
# 2. Pristine cluster, set up through the normal server.
# ---------------------------------------------------------------------------
echo "== setup: $ROWS rows per table, cluster on port $FENCING_PGPORT"
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -v rows="$ROWS" -v shards="$SHARDS" >/dev/null <<'SQL'
CREATE EXTENSION fencing;

-- Unprotected tables.
CREATE TABLE plain    (id int PRIMARY KEY, shard int, val int, tok bigint) WITH (fillfactor = 50);
CREATE TABLE plain_tok (id int PRIMARY KEY, shard int, val int, tok bigint) WITH (fillfactor = 50);
CREATE TABLE ctrig    (id int PRIMARY KEY, shard int, val int, tok bigint) WITH (fillfactor = 50);
CREATE TABLE plain2   (id int PRIMARY KEY, shard int, val int, tok bigint) WITH (fillfactor = 50);
CREATE TABLE plpg_row (id int PRIMARY KEY, shard int, val int, tok bigint) WITH (fillfactor = 50);
CREATE TABLE plpg_res (id int PRIMARY KEY, shard int, val int, tok bigint) WITH (fillfactor = 50);
-- The HWM table keeps the default fillfactor, as fencing.resource_hwm does.
CREATE TABLE plpg_hwm (res int PRIMARY KEY, hwm bigint NOT NULL);

-- Protected: a fencing_token column protects a table (row scope) by itself.
CREATE TABLE fenced  (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE fenced2 (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE res_t   (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE transp  (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res_t', scope => 'resource', resource_column => 'shard');
CREATE TABLE res_rise (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res_rise', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'rising');
-- A fencing_token column on a table left unprotected (reference 1c).
SET fencing.auto_protect = off;
CREATE TABLE tok_unprot (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE ctrig_tok (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE transp_unprot (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
RESET fencing.auto_protect;
CREATE TRIGGER ctrig_tok_floor BEFORE UPDATE ON ctrig_tok
    FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();

-- 2. The near-empty builtin C trigger (it compares old and new tuple).
CREATE TRIGGER ctrig_floor BEFORE UPDATE ON ctrig
    FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();

-- 7. PL/pgSQL, row check.
CREATE FUNCTION plpg_row_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.tok < OLD.tok THEN
        RAISE EXCEPTION 'stale token % < %', NEW.tok, OLD.tok USING ERRCODE = 'TF001';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER plpg_row_check BEFORE UPDATE ON plpg_row
    FOR EACH ROW EXECUTE FUNCTION plpg_row_check();

-- 8. PL/pgSQL, resource scope: check-and-raise in a separate HWM table.
CREATE FUNCTION plpg_res_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE plpg_hwm SET hwm = NEW.tok WHERE res = NEW.shard AND hwm <= NEW.tok;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'stale token % for shard %', NEW.tok, NEW.shard USING ERRCODE = 'TF001';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER plpg_res_check BEFORE UPDATE ON plpg_res
    FOR EACH ROW EXECUTE FUNCTION plpg_res_check();

INSERT INTO plpg_hwm SELECT s, 1 FROM generate_series(0, :shards - 1) s;
INSERT INTO plain    SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO plain_tok SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO tok_unprot SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO ctrig    SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO plain2   SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO plpg_row SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO plpg_res SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO fenced   SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO fenced2  SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO res_t    SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO res_rise SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO ctrig_tok SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO transp   SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;
INSERT INTO transp_unprot SELECT g, g % :shards, 0, 1 FROM generate_series(1, :rows) g;

SQL
if [ -n "${BENCH_SETUP_SQL:-}" ]; then
    echo "   extra setup (BENCH_SETUP_SQL): $BENCH_SETUP_SQL"
    psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "$BENCH_SETUP_SQL" >/dev/null
fi
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "VACUUM ANALYZE" -c "CHECKPOINT"
# The setup must have protected exactly what the bench expects.
protected=$(psql -X -At -d "$DB" -c "SELECT string_agg(table_name::text || ':' || scope, ' ' ORDER BY table_name::text) FROM fencing_protected")
if [ "$protected" != "fenced:row fenced2:row res_rise:resource res_t:resource transp:row" ]; then
    echo "bench: unexpected protection after setup: '$protected'" >&2
    exit 1
fi
PRISTINE=$FENCING_CLUSTER_DIR/data
as_server_user "$PGBIN/pg_ctl" -D "$PRISTINE" -m fast -w stop >/dev/null

# ---------------------------------------------------------------------------
# 3. One callgrind run: run_one VARIANT N (in its own directory).
# ---------------------------------------------------------------------------
run_one() {
    local v=$1 n=$2
    local dir=$WORK/runs/$v-$n
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_server_user cp -a "$PRISTINE" "$dir/data"
    {
        echo "${V_PREPARE[$v]}"
        V_EXEC_TEMPLATE=${V_EXEC[$v]} awk -v n="$n" -v rows="$ROWS" -v tok="$TOKEN" 'BEGIN {
            t = ENVIRON["V_EXEC_TEMPLATE"]
            for (i = 1; i <= n; i++) {
                line = t
                gsub(/\{ID\}/, (i - 1) % rows + 1, line)
                gsub(/\{CYCLE\}/, int((i - 1) / rows) + 1, line)
                gsub(/\{RISING\}/, tok + i, line)
                print line
            }
        }'
        local tokcheck="tok::bigint = $TOKEN"
        case $v in resrise | resriseon) tokcheck="tok::bigint > $TOKEN" ;; esac
        echo "SELECT 'BENCHCHECK ' || count(*) FILTER (WHERE $tokcheck) || ' ' || coalesce(sum(val), 0) AS c FROM ${V_TABLE[$v]}"
    } >"$dir/script.sql"
    local rc=0
    local extra
    read -r -a extra <<<"${V_SETTINGS[$v]:-}"
    as_server_user valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
        "$PGBIN/postgres" --single -D "$dir/data" "${SETTINGS[@]}" "${extra[@]}" "$DB" \
        <"$dir/script.sql" >"$dir/stdout" 2>"$dir/stderr" || rc=$?
    as_server_user rm -rf "$dir/data"
    local err=""
    [ "$rc" = 0 ] || err="postgres --single exited $rc"
    if [ -z "$err" ] && grep -q 'ERROR' "$dir/stdout" "$dir/stderr"; then
        err="SQL error: $(grep -h -m1 'ERROR' "$dir/stdout" "$dir/stderr")"
    fi
    # Every write was admitted: val sums to N, and every touched row carries
    # the token (for the statements that write it).
    local touched=$((n < ROWS ? n : ROWS))
    local want_tok=$((V_SETS_TOKEN[$v] ? touched : 0))
    local want="BENCHCHECK $want_tok $n"
    local got
    got=$(grep -o 'BENCHCHECK [0-9]* [0-9]*' "$dir/stdout" || true)
    [ -z "$err" ] && [ "$got" != "$want" ] && err="check failed: got '$got', want '$want'"
    if [ -z "$err" ] && [ "$v" = fupdate ]; then
        local ones
        ones=$(grep -c 'fenced_update = "1"' "$dir/stdout" || true)
        [ "$ones" = "$n" ] || err="fenced_update() returned 1 only $ones times of $n"
    fi
    local ir
    ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$dir/callgrind.out" 2>/dev/null || true)
    [ -z "$err" ] && [ -z "$ir" ] && err="no callgrind total"
    if [ -n "$err" ]; then
        echo "$err" >"$dir/failed"
        echo "   $v N=$n: FAILED: $err (see $dir)" >&2
        return 1
    fi
    echo "$ir" >"$dir/ir"
    echo "   $v N=$n: Ir=$ir"
}

echo "== callgrind: ${#VARIANTS[@]} variants x N=$N1,$N2, $JOBS at a time"
echo "   postgres --single ${SETTINGS[*]}"
start=$SECONDS
set -m  # every background run gets its own process group
queue=()
for v in "${VARIANTS[@]}"; do queue+=("$v $N2" "$v $N1"); done
for job in "${queue[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    # shellcheck disable=SC2086
    run_one $job &
    PIDS+=($!)
done
wait || true
set +m
PIDS=()
echo "   ($((SECONDS - start)) s)"

failed=0
for v in "${VARIANTS[@]}"; do
    for n in "$N1" "$N2"; do
        [ -f "$WORK/runs/$v-$n/ir" ] || failed=1
    done
done
if [ "$failed" = 1 ]; then
    BENCH_KEEP=1
    echo "bench: some runs failed; nothing to report" >&2
    exit 1
fi

# ---------------------------------------------------------------------------
# 4. Report.
# ---------------------------------------------------------------------------
declare -A PER
for v in "${VARIANTS[@]}"; do
    a=$(cat "$WORK/runs/$v-$N1/ir")
    b=$(cat "$WORK/runs/$v-$N2/ir")
    PER[$v]=$(( (b - a) / (N2 - N1) ))
done

ratio() {  # ratio A B -> A/B with 3 decimals, or "-"
    if [ -n "${PER[$1]:-}" ] && [ -n "${PER[$2]:-}" ]; then
        awk -v a="${PER[$1]}" -v b="${PER[$2]}" 'BEGIN { printf "%.3f", a / b }'
    else
        echo "-"
    fi
}
verdict() {  # verdict RATIO LIMIT
    [ "$1" = - ] && { echo "-"; return; }
    awk -v r="$1" -v l="$2" 'BEGIN { print (r <= l ? "PASS" : "MISS") }'
}

RESULTS=$BENCH_DIR/results.txt
{
    echo "# fencing bench $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src sql 2>/dev/null || echo '+dirty')"
    echo "# postgres $("$PGBIN/postgres" --version | awk '{print $3}') --single ${SETTINGS[*]}; rows=$ROWS shards=$SHARDS token=$TOKEN N1=$N1 N2=$N2"
    [ -n "${BENCH_SETUP_SQL:-}" ] && echo "# BENCH_SETUP_SQL: $BENCH_SETUP_SQL"
    echo "# variant ir_per_write ir_n1 ir_n2"
} >"$RESULTS"

echo
echo "Instructions per write (callgrind Ir, (Ir(N=$N2) - Ir(N=$N1)) / $((N2 - N1)))"
echo "postgres --single ${SETTINGS[*]}; $ROWS rows per table, fillfactor 50;"
echo "each EXECUTE is one autocommitted transaction writing the next row (ids cycle);"
echo "token $TOKEN every time (non-strict), so every write is admitted."
echo
printf '%-58s %12s %9s\n' "variant" "Ir/write" "vs plain"
printf '%-58s %12s %9s\n' "$(printf '%.0s-' {1..58})" "------------" "---------"
for v in "${VARIANTS[@]}"; do
    r=-
    case $v in plaintok | tokunprot | ctrig | ctrigtok | row | rowstats | rownostats | resource | resstats | resrise | resriseon | transparent | txunprot | plpgrow | plpgres) r=$(ratio "$v" plain) ;; esac
    [ "$v" = plain ] && r=1.000
    printf '%-58s %12s %9s\n' "${V_TITLE[$v]}" "${PER[$v]}" "$r"
    echo "variant=$v ir_per_write=${PER[$v]} ir_n1=$(cat "$WORK/runs/$v-$N1/ir") ir_n2=$(cat "$WORK/runs/$v-$N2/ir") ratio_vs_plain=$r" >>"$RESULTS"
done
echo
echo "Targets"
target() {  # target NAME A B LIMIT
    local r
    r=$(ratio "$2" "$3")
    local res
    res=$(verdict "$r" "$4")
    printf '  %-44s %7s  (target <= %.2fx)  %s\n' "$1" "${r}x" "$4" "$res"
    echo "target=$1 ratio=$r limit=$4 result=$res" >>"$RESULTS"
}
# "Plain" for the row target is the identical statement on the same table
# shape, unprotected: only then does the guard account for the difference.
target "row-fenced / same statement unprotected" row tokunprot 1.05
target "row-fenced, counters on / not preloaded" rowstats row 1.01
target "row-fenced, counters on / off (track_stats)" rowstats rownostats 1.01
target "resource-fenced, counters on / not preloaded" resstats resource 1.01
target "resource-fenced / plain" resource plain 1.30
target "resource-fenced, raising / plain" resrise plain 1.40
target "resource-fenced, raising, sync commit on / plain" resriseon plain 1.40
target "fenced_update / hand-written conditional" fupdate handcond 1.30
target "transparent / same transaction unfenced" transparent txunprot 1.05
echo "References"
reference() {  # reference NAME A B
    local r
    r=$(ratio "$2" "$3")
    printf '  %-44s %7s\n' "$1" "${r}x"
    echo "reference=$2/$3 ratio=$r" >>"$RESULTS"
}
reference "C trigger floor / plain" ctrig plain
reference "C trigger floor, same statement (2b/1c)" ctrigtok tokunprot
reference "row-fenced / plain UPDATE (1)" row plain
reference "row-fenced / same shape, unprotected (1c)" row tokunprot
reference "row-fenced / PL/pgSQL row check" row plpgrow
reference "resource-fenced / PL/pgSQL resource" resource plpgres
reference "PL/pgSQL row check / plain" plpgrow plain
reference "PL/pgSQL resource / plain" plpgres plain
echo
echo "results: ${RESULTS#"$REPO"/}"

# ---------------------------------------------------------------------------
# 5. Hotspots: per-write inclusive cost per function (difference of the two
#    runs), for the row-fenced and fenced_update() variants.
# ---------------------------------------------------------------------------
HOT=$BENCH_DIR/hotspots.txt
: >"$HOT"
# inclusive_table VARIANT N -> "Ir<TAB>function" for every function of one run.
# callgrind splits a function by source file when code is inlined from
# headers; the part that was called (the largest) carries the inclusive cost,
# so the maximum per name is kept. Lines look like
# "  1,234 (12.3%)  file:function [object]".
inclusive_table() {
    local out=$WORK/runs/$1-$2/inclusive.tsv
    if [ ! -f "$out" ]; then
        callgrind_annotate --inclusive=yes --threshold=100 --auto=no \
            "$WORK/runs/$1-$2/callgrind.out" 2>/dev/null |
            awk '
                /^ *[0-9,]+ +\(/ {
                    ir = $0; sub(/^ */, "", ir); sub(/ .*/, "", ir); gsub(/,/, "", ir)
                    name = $0; sub(/^ *[0-9,]+ +(\([^)]*\) +)?/, "", name)
                    if (name ~ /^PROGRAM TOTALS/) next
                    sub(/ \[[^]]*\]$/, "", name)      # " [object]"
                    sub(/^[^ :]*:/, "", name)         # "file:" (paths hold no colon)
                    if (!(name in m) || ir + 0 > m[name]) m[name] = ir + 0
                }
                END { for (k in m) printf "%d\t%s\n", m[k], k }' >"$out"
    fi
    cat "$out"
}
# per_write VARIANT -> "Ir/write<TAB>function", largest first.
per_write() {
    local v=$1
    { inclusive_table "$v" "$N1"; echo "--"; inclusive_table "$v" "$N2"; } |
        awk -F'\t' -v d="$((N2 - N1))" '
            $0 == "--" { second = 1; next }
            !second { a[$2] = $1; next }
            { x = ($1 - ($2 in a ? a[$2] : 0)) / d; if (x >= 1) printf "%.0f\t%s\n", x, $2 }' |
        sort -t"$(printf '\t')" -k1,1nr
}
# calling_table VARIANT N REGEX -> "Ir<TAB>callee": the direct callees of the
# functions whose name matches REGEX, from callgrind_annotate --tree=calling
# (a "*" line names the function, the ">" lines after it its callees).
calling_table() {
    local f=$WORK/runs/$1-$2/calling.txt
    [ -f "$f" ] || callgrind_annotate --inclusive=yes --tree=calling --threshold=100 --auto=no \
        "$WORK/runs/$1-$2/callgrind.out" >"$f" 2>/dev/null
    # The regex goes through the environment: -v would eat its backslashes.
    CALLER_RE=$3 awk '
        function strip(s) {
            sub(/ \[[^]]*\]$/, "", s); sub(/ \([0-9,]+x\)$/, "", s); sub(/^[^ :]*:/, "", s)
            return s
        }
        /^ *[0-9,]+ +\([^)]*\) +\* +/ {
            name = $0; sub(/^ *[0-9,]+ +\([^)]*\) +\* +/, "", name)
            inside = strip(name) ~ ENVIRON["CALLER_RE"]; next
        }
        /^ *$/ { inside = 0; next }
        inside && /^ *[0-9,]+ +\([^)]*\) +> +/ {
            ir = $0; sub(/^ */, "", ir); sub(/ .*/, "", ir); gsub(/,/, "", ir)
            name = $0; sub(/^ *[0-9,]+ +\([^)]*\) +> +/, "", name)
            sum[strip(name)] += ir
        }
        END { for (k in sum) printf "%d\t%s\n", sum[k], k }' "$f"
}
# callees VARIANT REGEX -> "Ir/write<TAB>callee", largest first.
callees() {
    { calling_table "$1" "$N1" "$2"; echo "--"; calling_table "$1" "$N2" "$2"; } |
        awk -F'\t' -v d="$((N2 - N1))" '
            $0 == "--" { second = 1; next }
            !second { a[$2] = $1; next }
            { x = ($1 - ($2 in a ? a[$2] : 0)) / d; if (x >= 1) printf "%.0f\t%s\n", x, $2 }' |
        sort -t"$(printf '\t')" -k1,1nr
}
# compare A B -> functions where A costs more per write than B (at least 100
# Ir), leaving out A's spine frames (above 75% of A's total).
compare() {
    { per_write "$1"; echo "--"; per_write "$2"; } |
        awk -F'\t' -v total="${PER[$1]}" '
            $0 == "--" { second = 1; next }
            !second { a[$2] = $1; next }
            { b[$2] = $1 }
            END {
                for (k in a) {
                    if (a[k] > 0.75 * total) continue
                    x = a[k] - (k in b ? b[k] : 0)
                    if (x >= 100) printf "%d\t%s\n", x, k
                }
            }' |
        sort -t"$(printf '\t')" -k1,1nr
}
# The call-stack spine every statement shares (main loop, portal, EXECUTE)
# carries no information: frames above 75% of the variant's total are hidden.
# Addresses are static functions of the stripped postgres binary.
show() {  # show TOPN [TOTAL]
    awk -F'\t' -v top="$1" -v total="${2:-0}" '
        total > 0 && $1 > 0.75 * total { next }
        shown < top {
            name = length($2) > 110 ? substr($2, 1, 107) "..." : $2
            printf "  %10s  %s\n", $1, name; shown++
        }'
}
report_hotspots() {  # report_hotspots VARIANT CALLEE_REGEX BASELINE
    local v=$1 re=$2 base=$3
    [ -n "${PER[$v]:-}" ] || return 0
    echo "== ${V_TITLE[$v]}: ${PER[$v]} Ir/write"
    echo "-- top functions, inclusive Ir per write (frames above 75% of the total hidden)"
    per_write "$v" | show 20 "${PER[$v]}"
    echo "-- direct callees of /$re/, inclusive Ir per write"
    callees "$v" "$re" | show 15
    if [ -n "${PER[$base]:-}" ]; then
        echo "-- more than in '${V_TITLE[$base]}' (${PER[$base]} Ir/write): inclusive Ir per write, difference"
        compare "$v" "$base" | show 25
    fi
    echo
}
{
    echo "# Per-write inclusive Ir per function: (Ir(N=$N2) - Ir(N=$N1)) / $((N2 - N1))."
    echo "# A function inlined from several files is counted at its largest part."
    echo
    report_hotspots row '^fencing_guard$' tokunprot
    report_hotspots resource '::SettleDirect\(' plpgres
    report_hotspots resrise '::SettleDirect\(' resource
    report_hotspots fupdate '::RunFenced\(' handcond
    report_hotspots transparent '^fencing_guard$' txunprot
    if [ -n "${PER[fupdate]:-}" ]; then
        # SPI_execute_plan hands over to one static function: show its callees.
        inner=$(callees fupdate '^SPI_execute_plan$' | awk -F'\t' 'NR == 1 { print $2 }')
        echo "== fenced_update(): callees of SPI_execute_plan -> $inner, inclusive Ir per write"
        [ -n "$inner" ] && callees fupdate "^${inner}\$" | show 12
    fi
} >"$HOT"
if [ -s "$HOT" ]; then
    echo
    cat "$HOT"
    echo "hotspots: ${HOT#"$REPO"/}"
fi
exit 0
