#!/usr/bin/env bash
# Contention curves: TPS and P50/P99 latency at 1, 2, 4, 8 and 16 clients for
# every way of fencing a single-row UPDATE, as interleaved pairs against plain.
#
#   bash test/bench/contention.sh   (part of make bench-report / make bench)
#
# Each round runs every variant once at one client count, in an order that
# rotates from round to round, so the machine's drift hits every variant
# alike; the report (test/bench/report.py) takes, per variant and client
# count, the median over rounds of TPS and latency and of the same-round ratio
# variant/plain. Latency comes from pgbench's per-transaction log (-l).
#
# Variants (1,000 rows, each transaction writes one row chosen at random,
# -M prepared, always with the token the HWMs hold, so every write is
# admitted):
#   plain       UPDATE plain SET val = val + 1, tok = 5 WHERE id = :id (unprotected)
#   row         the same on a row-scope table
#   resource1   resource scope, every row in one resource
#   spread      resource scope, each row its own resource
#   table       table scope
#   fupdate     SELECT fenced_update('fenced2', 5, {id}, {val: 1}) (row scope)
#   transparent BEGIN; SET LOCAL fencing.token = 5; UPDATE (token not named); COMMIT
#   txplain     the same transaction on the unprotected table (transparent's pair)
#
# Knobs: CLIENT_COUNTS ("1 2 4 8 16"), ROUNDS (5), SECONDS_PER_RUN (3),
# VARIANTS, SYNC (synchronous_commit, default off), OUT (raw results, default
# bench/data/contention.tsv), CONTENTION_PGPORT (54395).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
CLIENT_COUNTS=${CLIENT_COUNTS:-1 2 4 8 16}
SYNC=${SYNC:-off}
OUT=${OUT:-bench/data/contention.tsv}
export FENCING_PGPORT=${CONTENTION_PGPORT:-54395}
export FENCING_CLUSTER_DIR=/tmp/fencing-contention-$FENCING_PGPORT
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
make -s >/dev/null && $SUDO make -s install >/dev/null
test/cluster.sh stop
WORK=$(mktemp -d /tmp/fencing-contention.XXXXXX)
chmod 777 "$WORK"
cleanup() {
    test/cluster.sh stop
    rm -rf "$WORK"
}
trap cleanup EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -c "ALTER SYSTEM SET synchronous_commit = $SYNC" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION fencing;
SET fencing.auto_protect = off;
CREATE TABLE plain (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
RESET fencing.auto_protect;
CREATE TABLE fenced (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE fenced2 (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE fenced3 (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE res1 (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res1', scope => 'resource', resource_column => 'shard');
CREATE TABLE spread (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('spread', scope => 'resource', resource_column => 'shard');
CREATE TABLE tab (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('tab', scope => 'table');
INSERT INTO plain SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO fenced SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO fenced2 SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO fenced3 SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO res1 SELECT g, 1000, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO spread SELECT g, g, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO tab SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
VACUUM ANALYZE;
SQL
declare -A SCRIPT=(
    [plain]='UPDATE plain SET val = val + 1, tok = 5 WHERE id = :id;'
    [row]='UPDATE fenced SET val = val + 1, tok = 5 WHERE id = :id;'
    [resource1]='UPDATE res1 SET val = val + 1, tok = 5 WHERE id = :id;'
    [spread]='UPDATE spread SET val = val + 1, tok = 5 WHERE id = :id;'
    [table]='UPDATE tab SET val = val + 1, tok = 5 WHERE id = :id;'
    [fupdate]="SELECT fenced_update('fenced2', 5, jsonb_build_object('id', (:id)::int), '{\"val\": 1}');"
    [transparent]=$'BEGIN;\nSET LOCAL fencing.token = 5;\nUPDATE fenced3 SET val = val + 1 WHERE id = :id;\nCOMMIT;'
    [txplain]=$'BEGIN;\nSET LOCAL fencing.token = 5;\nUPDATE plain SET val = val + 1 WHERE id = :id;\nCOMMIT;'
)
read -r -a VARIANTS <<<"${VARIANTS:-plain row resource1 spread table fupdate transparent txplain}"
for v in "${VARIANTS[@]}"; do
    [ -n "${SCRIPT[$v]:-}" ] || { echo "contention: unknown variant $v" >&2; exit 2; }
    printf '\\set id random(1, 1000)\n%s\n' "${SCRIPT[$v]}" >"$WORK/$v.sql"
done
mkdir -p "$(dirname "$OUT")"
{
    echo "# contention $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD) postgres $(pg_config --version | awk '{print $2}')"
    echo "# ${SECONDS_PER_RUN}s per run, $ROUNDS rounds, -M prepared, synchronous_commit=$SYNC, $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'variant\tclients\tround\ttps\tp50_ms\tp99_ms\ttransactions\n'
} >"$OUT"
start=$SECONDS
n=${#VARIANTS[@]}
for c in $CLIENT_COUNTS; do
    for ((r = 0; r < ROUNDS; r++)); do
        for ((i = 0; i < n; i++)); do
            v=${VARIANTS[$(((i + r) % n))]}
            prefix=$WORK/log-$v-$c-$r
            tps=$(cd "$WORK" && pgbench -n -M prepared -c "$c" -j "$c" -T "$SECONDS_PER_RUN" \
                -l --log-prefix="$prefix" -f "$WORK/$v.sql" 2>"$WORK/err" |
                sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
            if [ -z "$tps" ] || grep -q 'ERROR\|aborted' "$WORK/err"; then
                echo "contention: $v at $c clients failed:" >&2
                cat "$WORK/err" >&2
                exit 1
            fi
            # Log lines: client transaction latency_us script epoch us.
            read -r p50 p99 cnt < <(cat "$prefix".* | awk '{print $3}' | sort -n |
                awk '{a[NR] = $1} END {
                    i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
                    i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
                    printf "%.3f %.3f %d\n", a[i50] / 1000, a[i99] / 1000, NR }')
            rm -f "$prefix".*
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$c" "$((r + 1))" "$tps" "$p50" "$p99" "$cnt" >>"$OUT"
            printf 'clients %2s round %s %-12s %10.0f tps  p50 %6s ms  p99 %7s ms\n' "$c" "$((r + 1))" "$v" "$tps" "$p50" "$p99"
        done
    done
done
# Every write was admitted: each row's val counts its writes, every row kept token 5.
bad=$(psql -X -At -c "SELECT count(*) FROM (SELECT tok FROM fenced UNION ALL SELECT tok FROM res1 UNION ALL SELECT tok FROM spread UNION ALL SELECT tok FROM tab UNION ALL SELECT tok FROM fenced2 UNION ALL SELECT tok FROM fenced3) t WHERE tok::bigint <> 5")
[ "$bad" = 0 ] || { echo "contention: $bad rows lost token 5" >&2; exit 1; }
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - start)) s" >>"$OUT"
echo "contention: $((SECONDS - start)) s, raw results in $OUT"
