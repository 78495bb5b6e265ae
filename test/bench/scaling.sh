#!/usr/bin/env bash
# Scaling: instructions per write (callgrind, postgres --single, the method of
# test/bench/run.sh) while the HWM store holds 1k, 100k, 1M and 10M resource
# HWMs, and as many row tombstones.
#
#   bash test/bench/scaling.sh     (part of make bench-report / make bench)
#
# One cluster grows step by step: before each step, fencing.resource_hwm and
# fencing.row_tombstone are filled up to N entries directly (INSERT ...
# SELECT generate_series as the extension's owner, in the format the guard
# writes, checked against entries the guard wrote itself), then VACUUM
# ANALYZE and CHECKPOINT; the stopped data directory is copied for each
# callgrind run. Per-write cost = (Ir(N2 writes) - Ir(N1 writes)) / (N2 - N1).
#
#   resource  UPDATE spread SET val = val + 1, tok = '5' WHERE id = $1: resource
#             scope, each of the 1,000 rows its own resource, cycling over the
#             rows (the first pass raises each HWM from 1 to 5, the measured
#             pass reuses the token). The 1,000 resources are among the N.
#   tombstone INSERT INTO tomb VALUES ($1, 0, '5'): row scope, every INSERT
#             looks up its key's tombstone (before the write, and again in the
#             AFTER INSERT recheck); tombstones lie on the even keys 2..2N,
#             the inserted keys are the odd ones, so each lookup descends the
#             whole index and misses.
#
# Knobs: SCALES ("1000 100000 1000000 10000000"), BENCH_N1/BENCH_N2
# (1000/2000), OUT (bench/data/scaling.tsv), SCALING_PGPORT (54396).
set -euo pipefail
cd "$(dirname "$0")/../.."
SCALES=${SCALES:-1000 100000 1000000 10000000}
N1=${BENCH_N1:-1000}
N2=${BENCH_N2:-2000}
OUT=${OUT:-bench/data/scaling.tsv}
export FENCING_PGPORT=${SCALING_PGPORT:-54396}
PGBIN=$(pg_config --bindir)
DB=fencing_scaling
SETTINGS=(-c fsync=off -c synchronous_commit=off -c jit=off -c huge_pages=off
          -c max_wal_size=4GB -c checkpoint_timeout=1d)
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
for tool in valgrind callgrind_annotate psql; do
    command -v "$tool" >/dev/null || { echo "scaling: $tool not found (make deps)" >&2; exit 2; }
done
make -s >/dev/null && $SUDO make -s install >/dev/null

WORK=$(mktemp -d /tmp/fencing-scaling.XXXXXX)
chmod 755 "$WORK"
[ "$(id -u)" = 0 ] && chown postgres: "$WORK"
export FENCING_CLUSTER_DIR=$WORK/cluster
cleanup() {
    test/cluster.sh stop >/dev/null 2>&1 || true
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

test/cluster.sh start
eval "$(test/cluster.sh env)"
DATA=$FENCING_CLUSTER_DIR/data
cat >>"$DATA/postgresql.conf" <<'CONF'
max_wal_size = 8GB
checkpoint_timeout = 1d
synchronous_commit = off
maintenance_work_mem = 512MB
CONF
as_server_user "$PGBIN/pg_ctl" -D "$DATA" -l "$FENCING_CLUSTER_DIR/server.log" -w restart >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE spread (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('spread', scope => 'resource', resource_column => 'shard');
CREATE TABLE tomb (id int PRIMARY KEY, val int, tok fencing_token);
-- Rows 1..1000, resources 0..999: the guard creates their HWMs (token 1).
INSERT INTO spread SELECT g, g - 1, 0, 1 FROM generate_series(1, 1000) g;
-- Two tombstones the guard writes itself, to check the direct fill's format.
INSERT INTO tomb VALUES (2, 0, 1), (4, 0, 1);
BEGIN; SET LOCAL fencing.token = 1; DELETE FROM tomb; COMMIT;
SQL
NS=$(psql -X -At -d "$DB" -c "SELECT resource_namespace FROM fencing.protected WHERE relid = 'spread'::regclass")
# The guard's formats: resource = the value's text, tombstone key = {hex of int4send}.
fmt=$(psql -X -At -d "$DB" -c "
    SELECT (SELECT count(*) FROM fencing.resource_hwm WHERE namespace = '$NS' AND resource = ANY (SELECT (g - 1)::text FROM generate_series(1, 1000) g)),
           (SELECT count(*) FROM fencing.row_tombstone WHERE relid = 'tomb'::regclass AND key IN (ARRAY[encode(int4send(2), 'hex')], ARRAY[encode(int4send(4), 'hex')]))")
[ "$fmt" = "1000|2" ] || { echo "scaling: unexpected HWM formats ($fmt)" >&2; exit 1; }

run_one() {  # run_one KIND SCALE N
    local kind=$1 scale=$2 n=$3
    local dir=$WORK/runs/$kind-$scale-$n
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_server_user cp -a "$DATA" "$dir/data"
    rm -f "$dir/data/postmaster.pid"
    {
        if [ "$kind" = resource ]; then
            echo 'PREPARE p(int, fencing_token) AS UPDATE spread SET val = val + 1, tok = $2 WHERE id = $1'
            awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++) printf "EXECUTE p(%d, '"'"'5'"'"')\n", (i - 1) % 1000 + 1 }'
            echo "SELECT 'BENCHCHECK ' || count(*) FILTER (WHERE tok::bigint = 5) || ' ' || sum(val) AS c FROM spread"
        else
            echo 'PREPARE p(int, fencing_token) AS INSERT INTO tomb VALUES ($1, 0, $2)'
            awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++) printf "EXECUTE p(%d, '"'"'5'"'"')\n", 2 * i - 1 }'
            echo "SELECT 'BENCHCHECK ' || count(*) FILTER (WHERE tok::bigint = 5) || ' ' || count(*) AS c FROM tomb"
        fi
    } >"$dir/script.sql"
    local rc=0
    as_server_user valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
        "$PGBIN/postgres" --single -D "$dir/data" "${SETTINGS[@]}" "$DB" \
        <"$dir/script.sql" >"$dir/stdout" 2>"$dir/stderr" || rc=$?
    as_server_user rm -rf "$dir/data"
    local want got
    if [ "$kind" = resource ]; then want="BENCHCHECK $((n < 1000 ? n : 1000)) $n"; else want="BENCHCHECK $n $n"; fi
    got=$(grep -o 'BENCHCHECK [0-9]* [0-9]*' "$dir/stdout" || true)
    if [ "$rc" != 0 ] || grep -q ERROR "$dir/stdout" "$dir/stderr" || [ "$got" != "$want" ]; then
        echo "scaling: $kind at $scale, N=$n failed (rc $rc, got '$got', want '$want'):" >&2
        grep -h -m3 ERROR "$dir/stdout" "$dir/stderr" >&2 || true
        return 1
    fi
    awk '/^(summary|totals):/ { print $2; exit }' "$dir/callgrind.out" >"$dir/ir"
    # Inclusive Ir per function (the largest part of a function callgrind
    # splits by source file), for the profile of the growth.
    callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$dir/callgrind.out" 2>/dev/null |
        awk '/^ *[0-9,]+ +\(/ {
                ir = $0; sub(/^ */, "", ir); sub(/ .*/, "", ir); gsub(/,/, "", ir)
                name = $0; sub(/^ *[0-9,]+ +(\([^)]*\) +)?/, "", name)
                if (name ~ /^PROGRAM TOTALS/) next
                sub(/ \[[^]]*\]$/, "", name); sub(/^[^ :]*:/, "", name)
                if (!(name in m) || ir + 0 > m[name]) m[name] = ir + 0
            }
            END { for (k in m) printf "%d\t%s\n", m[k], k }' >"$dir/inclusive.tsv"
    rm -f "$dir/callgrind.out"
}

mkdir -p "$(dirname "$OUT")"
{
    echo "# scaling $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD) postgres $("$PGBIN/postgres" --version | awk '{print $3}') --single ${SETTINGS[*]}; N1=$N1 N2=$N2"
    printf 'kind\tentries\tir_per_write\tir_n1\tir_n2\thwm_table_mb\tfill_s\n'
} >"$OUT"
have=0
start=$SECONDS
for scale in $SCALES; do
    t0=$SECONDS
    # Fill up to SCALE entries: resources (have .. scale-1) as text, and
    # tombstones on the even keys 2*(have+1) .. 2*scale (the two the guard
    # wrote, keys 2 and 4, are already there).
    as_server_user "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1 ||
        as_server_user "$PGBIN/pg_ctl" -D "$DATA" -l "$FENCING_CLUSTER_DIR/server.log" -w start >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null <<SQL
INSERT INTO fencing.resource_hwm (namespace, resource, hwm)
    SELECT '$NS', g::text, 1 FROM generate_series($have, $scale - 1) g
    ON CONFLICT DO NOTHING;
INSERT INTO fencing.row_tombstone (relid, key, hwm)
    SELECT 'tomb'::regclass, ARRAY[encode(int4send(2 * g), 'hex')], 1 FROM generate_series($((have + 1)), $scale) g
    ON CONFLICT DO NOTHING;
VACUUM ANALYZE fencing.resource_hwm;
VACUUM ANALYZE fencing.row_tombstone;
CHECKPOINT;
SQL
    counts=$(psql -X -At -d "$DB" -c "SELECT (SELECT count(*) FROM fencing.resource_hwm WHERE namespace = '$NS') || ' ' || (SELECT count(*) FROM fencing.row_tombstone WHERE relid = 'tomb'::regclass) || ' ' || pg_total_relation_size('fencing.resource_hwm') / 1048576")
    read -r nres ntomb mb <<<"$counts"
    [ "$nres" = "$scale" ] && [ "$ntomb" = "$scale" ] ||
        { echo "scaling: filled $nres HWMs and $ntomb tombstones, want $scale" >&2; exit 1; }
    have=$scale
    fill=$((SECONDS - t0))
    as_server_user "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    echo "== $scale HWMs and tombstones (filled in $fill s, resource_hwm $mb MB)"
    set -m
    pids=()
    for kind in resource tombstone; do
        for n in "$N1" "$N2"; do
            run_one "$kind" "$scale" "$n" &
            pids+=($!)
            # Two at a time.
            if [ "${#pids[@]}" -ge 2 ]; then
                for p in "${pids[@]}"; do wait "$p" || exit 1; done
                pids=()
            fi
        done
    done
    set +m
    for kind in resource tombstone; do
        a=$(cat "$WORK/runs/$kind-$scale-$N1/ir")
        b=$(cat "$WORK/runs/$kind-$scale-$N2/ir")
        per=$(((b - a) / (N2 - N1)))
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$scale" "$per" "$a" "$b" "$mb" "$fill" >>"$OUT"
        printf '   %-10s %10s entries: %8s Ir/write\n' "$kind" "$scale" "$per"
    done
done
# Where the growth goes: per-write inclusive Ir per function at the smallest
# and the largest scale, the functions that grew most (frames above 75% of
# the write's cost hidden: they grow by the total).
per_write() {  # per_write KIND SCALE -> "Ir/write<TAB>function"
    { cat "$WORK/runs/$1-$2-$N1/inclusive.tsv"; echo "--"; cat "$WORK/runs/$1-$2-$N2/inclusive.tsv"; } |
        awk -F'\t' -v d="$((N2 - N1))" '$0 == "--" { second = 1; next }
            !second { a[$2] = $1; next }
            { x = ($1 - ($2 in a ? a[$2] : 0)) / d; if (x >= 1) printf "%.0f\t%s\n", x, $2 }'
}
read -r -a scales <<<"$SCALES"
small=${scales[0]}
large=${scales[${#scales[@]} - 1]}
PROFILE_OUT=${PROFILE_OUT:-$(dirname "$OUT")/scaling-profile.txt}
{
    for kind in resource tombstone; do
        total=$(awk -F'\t' -v k="$kind" -v e="$large" '$1 == k && $2 == e { print $3 }' "$OUT")
        echo "$kind ($total Ir/write at $large entries): per-write inclusive Ir at $small, at $large, growth, function"
        { per_write "$kind" "$small"; echo "--"; per_write "$kind" "$large"; } |
            awk -F'\t' -v total="$total" '$0 == "--" { second = 1; next }
                !second { a[$2] = $1; next }
                { if ($1 > 0.75 * total) next
                  g = $1 - ($2 in a ? a[$2] : 0)
                  if (g >= 200) printf "%8d %8d %7d  %s\n", ($2 in a ? a[$2] : 0), $1, g, substr($2, 1, 90) }' |
            sort -k3,3nr | head -30
        echo
    done
} >"$PROFILE_OUT"
cat "$PROFILE_OUT"
echo "scaling: $((SECONDS - start)) s, raw results in $OUT, profile in $PROFILE_OUT"
