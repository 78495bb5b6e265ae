#!/usr/bin/env bash
# Wall-clock A/B with pgbench, interleaved: each round runs every variant once,
# in a rotating order, so drift on a noisy machine hits all variants alike.
# Reports median TPS per variant and the cost ratio median(plain)/median(v).
#
#   bash test/bench/pgbench.sh            (ROUNDS=5 SECONDS_PER_RUN=8 CLIENTS=1)
#   make bench-contention                 8 clients on one resource / one table:
#                                         VARIANTS="plain resource1 table" ROUNDS=5
#   SYNC=on ...                           synchronous_commit = on (default off)
#
# Variants: plain, row, resource (10 resources), resource1 (every row in one
# resource), table (table scope), hand (hand-written conditional UPDATE),
# fupdate (fenced_update(), against hand). Every write offers the token the
# HWMs already hold (the holder's token), so every write is admitted.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
CLIENTS=${CLIENTS:-1}
SYNC=${SYNC:-off}  # synchronous_commit for every variant
export FENCING_PGPORT=${FENCING_PGPORT:-54389}
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
make -s >/dev/null && $SUDO make -s install >/dev/null
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -c "ALTER SYSTEM SET synchronous_commit = $SYNC" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION fencing;
SET fencing.auto_protect = off;
CREATE TABLE plain (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE hand (id int PRIMARY KEY, shard int, val int, tok bigint) WITH (fillfactor = 50);
RESET fencing.auto_protect;
CREATE TABLE fenced (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE fenced2 (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE res (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res', scope => 'resource', resource_column => 'shard');
CREATE TABLE res1 (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res1', scope => 'resource', resource_column => 'shard');
CREATE TABLE tab (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('tab', scope => 'table');
INSERT INTO plain SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO hand SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO fenced SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO fenced2 SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO res SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO res1 SELECT g, 1000, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO tab SELECT g, g % 10, 0, 5 FROM generate_series(1, 1000) g;
VACUUM ANALYZE;
SQL
WORK=$(mktemp -d)
declare -A SCRIPT=(
    [plain]='UPDATE plain SET val = val + 1, tok = 5 WHERE id = :id;'
    [row]='UPDATE fenced SET val = val + 1, tok = 5 WHERE id = :id;'
    [resource]='UPDATE res SET val = val + 1, tok = 5 WHERE id = :id;'
    [resource1]='UPDATE res1 SET val = val + 1, tok = 5 WHERE id = :id;'
    [table]='UPDATE tab SET val = val + 1, tok = 5 WHERE id = :id;'
    [hand]='UPDATE hand SET val = val + 1, tok = 5 WHERE id = :id AND tok <= 5;'
    [fupdate]="SELECT fenced_update('fenced2', 5, jsonb_build_object('id', (:id)::int), '{\"val\": 1}');"
)
read -r -a VARIANTS <<<"${VARIANTS:-plain row resource hand fupdate}"
for v in "${VARIANTS[@]}"; do
    printf '\\set id random(1, 1000)\n%s\n' "${SCRIPT[$v]}" >"$WORK/$v.sql"
done
for ((r = 0; r < ROUNDS; r++)); do
    n=${#VARIANTS[@]}
    for ((i = 0; i < n; i++)); do
        v=${VARIANTS[$(((i + r) % n))]}
        tps=$(pgbench -n -M prepared -c "$CLIENTS" -T "$SECONDS_PER_RUN" -f "$WORK/$v.sql" 2>/dev/null |
            sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
        echo "$v $tps $r" >>"$WORK/tps"
        echo "round $((r + 1)) $v: $tps tps"
    done
done
median() { grep "^$1 " "$WORK/tps" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
# The ratio of each round's pair (the variant's tps over plain's in the same
# round), whose median is robust to the machine's drift between rounds.
paired() {
    awk -v v="$1" -v b="$2" '$1 == b { base[$3] = $2 } $1 == v { t[$3] = $2 }
        END { for (r in t) if (base[r] > 0) print t[r] / base[r] }' "$WORK/tps" |
        sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}
printf '%-10s %12s %10s %14s\n' variant "median tps" "cost" "paired ratio"
for v in "${VARIANTS[@]}"; do
    m=$(median "$v")
    base=$([ "$v" = fupdate ] && median hand || median plain)
    printf "%-10s %s\n" "$v" "$(grep "^$v " "$WORK/tps" | awk '{printf "%s ", $2}')" >>"$WORK/raw"
    printf "%-10s %12s %9.3fx %13sx\n" "$v" "$m" "$(awk -v b="$base" -v m="$m" "BEGIN {print b / m}")" \
        "$(paired "$v" "$([ "$v" = fupdate ] && echo hand || echo plain)")"
done
echo "raw tps per round:"
cat "$WORK/raw"
echo "(cost = median tps of plain / median tps of the variant; paired ratio = median over"
echo " rounds of the variant's tps / plain's tps in the same round; fupdate against hand;"
echo " $ROUNDS interleaved rounds x ${SECONDS_PER_RUN}s, $CLIENTS client(s), -M prepared, synchronous_commit=$SYNC)"
rm -rf "$WORK"
