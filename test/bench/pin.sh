#!/usr/bin/env bash
# The cost of the internal session's search-path pin (pg/base/compat.hpp
# PinCatalogSearchPath / UnpinCatalogSearchPath), in callgrind instructions
# per call of a function that opens exactly one internal session:
# fencing_resource_advance (BeginInternal, the namespace check, EndInternal;
# then the check-and-raise, which opens none).
#
#   PG_CONFIG=... [PIN_NOPIN_PG_CONFIG=...] bash test/bench/pin.sh
#
# PG_CONFIG: a server with the extension installed. Its pristine data
# directory gets CREATE EXTENSION and one resource HWM (token 5); then each
# run is `postgres --single` under callgrind with N autocommitted
# EXECUTE p('r', '5') lines (each returns true: the HWM is at 5, nothing to
# raise), N = PIN_N1 and PIN_N2
# (default 1000, 2000); per call = the difference / (N2 - N1).
# Reported per call: the whole statement, BeginInternal and EndInternal
# inclusive, and their direct callees that are the pin (15/16:
# PushOverrideSearchPath, PopOverrideSearchPath; 17+: NewGUCNestLevel,
# RestrictSearchPath, AtEOXact_GUC).
# PIN_NOPIN_PG_CONFIG: optionally a copy of the same server tree with a build
# of the extension whose pin is a no-op; the same runs on it give the pin's
# whole cost, including what it makes others do (search path recomputation,
# plan revalidation), as the difference of the two totals.
set -euo pipefail
cd "$(dirname "$0")/../.."
PG_CONFIG=${PG_CONFIG:?PG_CONFIG: the server to measure}
N1=${PIN_N1:-1000}
N2=${PIN_N2:-2000}
export FENCING_PGPORT=${FENCING_PGPORT:-54370}
PGBIN=$("$PG_CONFIG" --bindir)
export PATH=$PGBIN:$PATH
DB=fencing_pin
SETTINGS=(-c fsync=off -c synchronous_commit=off -c jit=off -c huge_pages=off
          -c max_wal_size=4GB -c checkpoint_timeout=1d)
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

WORK=$(mktemp -d /tmp/fencing-pin.XXXXXX)
chmod 755 "$WORK"
[ "$(id -u)" = 0 ] && chown postgres: "$WORK"
export FENCING_CLUSTER_DIR=$WORK/cluster
# A failed run (in a command substitution) leaves $WORK/failed: keep it all.
trap 'test/cluster.sh stop >/dev/null 2>&1 || true; [ "${PIN_KEEP:-0}" = 1 ] || [ -e "$WORK/failed" ] || rm -rf "$WORK"' EXIT

test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB"
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "CREATE EXTENSION fencing" \
    -c "SELECT fencing_resource_advance('r', '5')" -c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
PRISTINE=$FENCING_CLUSTER_DIR/data
as_server_user "$PGBIN/pg_ctl" -D "$PRISTINE" -m fast -w stop >/dev/null

# run_one BINDIR TAG N -> Ir total; leaves $WORK/TAG-N/callgrind.out
run_one() {
    local bindir=$1 tag=$2 n=$3 dir=$WORK/$2-$3
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_server_user cp -a "$PRISTINE" "$dir/data"
    {
        echo "PREPARE p(text, fencing_token) AS SELECT fencing_resource_advance(\$1, \$2)"
        for ((i = 0; i < n; i++)); do echo "EXECUTE p('r', '5')"; done
    } >"$dir/script.sql"
    as_server_user valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
        "$bindir/postgres" --single -D "$dir/data" "${SETTINGS[@]}" "$DB" \
        <"$dir/script.sql" >"$dir/stdout" 2>"$dir/stderr"
    as_server_user rm -rf "$dir/data"
    if grep -q ERROR "$dir/stdout" "$dir/stderr" || [ "$(grep -c 'fencing_resource_advance = "t"' "$dir/stdout")" != "$n" ]; then
        echo "pin: run $tag N=$n failed (see $dir)" >&2
        touch "$WORK/failed"
        exit 1
    fi
    awk '/^(summary|totals):/ { print $2; exit }' "$dir/callgrind.out"
}

# callee_ir TAG N CALLER_RE -> "Ir<TAB>callee" for the direct callees of
# the functions matching CALLER_RE, and "Ir<TAB>=self" for their inclusive cost.
callee_ir() {
    callgrind_annotate --inclusive=yes --tree=calling --threshold=100 --auto=no \
        "$WORK/$1-$2/callgrind.out" 2>/dev/null |
        CALLER_RE=$3 awk '
            function strip(s) {
                sub(/ \[[^]]*\]$/, "", s); sub(/ \([0-9,]+x\)$/, "", s); sub(/^[^ :]*:/, "", s)
                return s
            }
            function num(s) { sub(/^ */, "", s); sub(/ .*/, "", s); gsub(/,/, "", s); return s + 0 }
            /^ *[0-9,]+ +\([^)]*\) +\* +/ {
                name = $0; sub(/^ *[0-9,]+ +\([^)]*\) +\* +/, "", name)
                inside = strip(name) ~ ENVIRON["CALLER_RE"]
                # callgrind lists code inlined from a header as a separate
                # part of the function; the called part (the largest) carries
                # the inclusive cost.
                if (inside && num($0) > self) self = num($0)
                next
            }
            /^ *$/ { inside = 0; next }
            inside && /^ *[0-9,]+ +\([^)]*\) +> +/ {
                name = $0; sub(/^ *[0-9,]+ +\([^)]*\) +> +/, "", name)
                sum[strip(name)] += num($0)
            }
            END { printf "%d\t=self\n", self; for (k in sum) printf "%d\t%s\n", sum[k], k }'
}
per_call() {  # per_call A B -> (B - A) / (N2 - N1), one decimal
    awk -v a="$1" -v b="$2" -v d="$((N2 - N1))" 'BEGIN { printf "%.1f", (b - a) / d }'
}
lookup() {  # lookup TSV NAME_RE -> summed Ir of matching names
    awk -F'\t' -v re="$2" '$2 ~ re { s += $1 } END { printf "%d", s }' <<<"$1"
}

measure() {  # measure BINDIR TAG
    local bindir=$1 tag=$2 a b
    a=$(run_one "$bindir" "$tag" "$N1") || exit 1
    b=$(run_one "$bindir" "$tag" "$N2") || exit 1
    echo "$tag: statement total per call $(per_call "$a" "$b") Ir (Ir N=$N1 $a, N=$N2 $b)"
    local fn ca cb
    for fn in BeginInternal EndInternal; do
        ca=$(callee_ir "$tag" "$N1" "::$fn\\(")
        cb=$(callee_ir "$tag" "$N2" "::$fn\\(")
        echo "  $fn inclusive: $(per_call "$(lookup "$ca" '^=self$')" "$(lookup "$cb" '^=self$')") Ir/call"
        local callee
        for callee in PushOverrideSearchPath PopOverrideSearchPath NewGUCNestLevel RestrictSearchPath AtEOXact_GUC; do
            local x y
            x=$(lookup "$ca" "^$callee\$")
            y=$(lookup "$cb" "^$callee\$")
            [ "$x" = 0 ] && [ "$y" = 0 ] && continue
            echo "    -> $callee: $(per_call "$x" "$y") Ir/call"
        done
    done
    echo "$tag $a $b" >>"$WORK/totals"
}

"$PGBIN/postgres" --version
measure "$PGBIN" pin
if [ -n "${PIN_NOPIN_PG_CONFIG:-}" ]; then
    measure "$("$PIN_NOPIN_PG_CONFIG" --bindir)" nopin
    read -r _ pa pb < <(grep '^pin ' "$WORK/totals")
    read -r _ na nb < <(grep '^nopin ' "$WORK/totals")
    awk -v pa="$pa" -v pb="$pb" -v na="$na" -v nb="$nb" -v d="$((N2 - N1))" 'BEGIN {
        p = (pb - pa) / d; q = (nb - na) / d
        printf "pin - nopin: %.1f Ir/call of %.1f (%.2f%%)\n", p - q, p, 100 * (p - q) / p }'
fi
