#!/usr/bin/env bash
# Check cost of a write under callgrind (postgres --single, as test/bench/run.sh
# measures it), for keys with an entry of their own and for keys judged by a
# floor. Run it once per build to compare (the extension installed for the
# pg_config on PATH; nothing is built here):
#
#   bash test/bench/retire_check.sh          REPEAT=2 ROWS=1000 FENCING_PGPORT=54393
#
# Variants (per-write Ir = (Ir(N2) - Ir(N1)) / (N2 - N1), N1 = ROWS, N2 = 2*ROWS):
#   own    UPDATE of a resource-scope row whose resource (10 shards) has its own
#          HWM entry, at the HWM's token: the steady state of a live key.
#   floor  UPDATE of a resource-scope row (resource = id) at token 5, each row
#          once: with retirement (the build has fencing_retire), every key's
#          entry was retired into the namespace's floor (1) first, so each
#          write is judged by the floor and makes the key's entry again;
#          without it (main), each key has its entry at 1 and the write raises it.
#   fresh  UPDATE of a resource-scope row (resource = id) whose resource never
#          had an entry (rows inserted without a token), each row once: a
#          brand-new key's first write, the same on every build.
#   insert INSERT of a new key into a row-scope table whose earlier keys were
#          deleted: with retirement their tombstones were retired into the
#          table's floor, so every INSERT is judged by the floor; without it,
#          the INSERT finds no tombstone of its own (the others stay).
#   reinsert INSERT into a row-scope table of a key that was deleted at token 1
#          and keeps its own tombstone (no retirement): the row-scope key with
#          an entry of its own, to set beside insert.
# Every write is admitted (a check query counts them).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROWS=${ROWS:-1000}
REPEAT=${REPEAT:-2}
VARIANTS=${VARIANTS:-own floor fresh insert reinsert}
N1=$ROWS
N2=$((2 * ROWS))
export FENCING_PGPORT=${FENCING_PGPORT:-54393}
export FENCING_CLUSTER_DIR=${FENCING_CLUSTER_DIR:-/tmp/fencing-retire-check-$FENCING_PGPORT}
PGBIN=$(pg_config --bindir)
DB=retire_check
SETTINGS=(-c fsync=off -c synchronous_commit=off -c jit=off -c huge_pages=off
          -c max_wal_size=4GB -c checkpoint_timeout=1d)
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
WORK=$(mktemp -d /tmp/retire-check.XXXXXX)
chmod 755 "$WORK"
trap 'test/cluster.sh stop; rm -rf "$WORK"' EXIT

test/cluster.sh stop
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB"
psql -X -q -o /dev/null -v ON_ERROR_STOP=1 -d "$DB" -v rows="$N2" <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE res_own (id int PRIMARY KEY, shard int, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res_own', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'own');
INSERT INTO res_own SELECT g, g % 10, 0, 5 FROM generate_series(1, :rows / 2) g;
CREATE TABLE res_fl (id int PRIMARY KEY, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res_fl', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'fl');
INSERT INTO res_fl SELECT g, 0, 1 FROM generate_series(1, :rows) g;
CREATE TABLE res_new (id int PRIMARY KEY, val int, tok fencing_token) WITH (fillfactor = 50);
SELECT fencing_protect('res_new', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'new', require_token => false);
INSERT INTO res_new SELECT g, 0, NULL FROM generate_series(1, :rows) g;
CREATE TABLE ev (id int PRIMARY KEY, val int, tok fencing_token);
INSERT INTO ev SELECT -g, 0, 1 FROM generate_series(1, :rows) g;
BEGIN; SET LOCAL fencing.token = 1; DELETE FROM ev; COMMIT;
CREATE TABLE ev_own (id int PRIMARY KEY, val int, tok fencing_token);
INSERT INTO ev_own SELECT g, 0, 1 FROM generate_series(1, :rows) g;
BEGIN; SET LOCAL fencing.token = 1; DELETE FROM ev_own; COMMIT;
-- With retirement: every entry of the namespace and every tombstone of the
-- table retired into their floors.
DO $$
BEGIN
    IF pg_catalog.to_regprocedure('fencing_retire(text,interval,bigint)') IS NOT NULL THEN
        PERFORM fencing_enable_retirement('fl');
        PERFORM fencing_retire('fl', '0 s');
        PERFORM fencing_enable_retirement('ev'::regclass);
        PERFORM fencing_retire('ev'::regclass, '0 s');
    END IF;
END $$;
SQL
STATE=$(psql -X -At -d "$DB" -c "SELECT (SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'fl') || ' fl entries, ' || (SELECT count(*) FROM fencing.row_tombstone) || ' tombstones'")
psql -X -q -d "$DB" -c "VACUUM ANALYZE" -c "CHECKPOINT"
as_server_user "$PGBIN/pg_ctl" -D "$FENCING_CLUSTER_DIR/data" -w stop >/dev/null
PRISTINE=$FENCING_CLUSTER_DIR/data

declare -A PREP EXEC CHECK
PREP[own]='PREPARE p(int, fencing_token) AS UPDATE res_own SET val = val + 1, tok = $2 WHERE id = $1'
EXEC[own]="EXECUTE p({MOD}, '5')"
CHECK[own]="SELECT 'CHECK ' || sum(val) FROM res_own"
PREP[floor]='PREPARE p(int, fencing_token) AS UPDATE res_fl SET val = val + 1, tok = $2 WHERE id = $1'
EXEC[floor]="EXECUTE p({I}, '5')"
CHECK[floor]="SELECT 'CHECK ' || sum(val) FROM res_fl"
PREP[fresh]='PREPARE p(int, fencing_token) AS UPDATE res_new SET val = val + 1, tok = $2 WHERE id = $1'
EXEC[fresh]="EXECUTE p({I}, '5')"
CHECK[fresh]="SELECT 'CHECK ' || sum(val) FROM res_new"
PREP[insert]='PREPARE p(int, fencing_token) AS INSERT INTO ev VALUES ($1, 1, $2)'
EXEC[insert]="EXECUTE p({I}, '5')"
CHECK[insert]="SELECT 'CHECK ' || sum(val) FROM ev"
PREP[reinsert]='PREPARE p(int, fencing_token) AS INSERT INTO ev_own VALUES ($1, 1, $2)'
EXEC[reinsert]="EXECUTE p({I}, '5')"
CHECK[reinsert]="SELECT 'CHECK ' || sum(val) FROM ev_own"

run_one() {  # variant n repeat -> Ir
    local v=$1 n=$2 dir=$WORK/$1-$2-$3
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_server_user cp -a "$PRISTINE" "$dir/data"
    {
        echo "${PREP[$v]}"
        T=${EXEC[$v]} awk -v n="$n" -v rows="$ROWS" 'BEGIN { t = ENVIRON["T"]
            for (i = 1; i <= n; i++) { l = t; gsub(/\{MOD\}/, (i - 1) % rows + 1, l); gsub(/\{I\}/, i, l); print l } }'
        echo "${CHECK[$v]}"
    } >"$dir/script.sql"
    as_server_user valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
        "$PGBIN/postgres" --single -D "$dir/data" "${SETTINGS[@]}" "$DB" \
        <"$dir/script.sql" >"$dir/stdout" 2>"$dir/stderr"
    as_server_user rm -rf "$dir/data"
    if grep -q ERROR "$dir/stdout" "$dir/stderr" || ! grep -q "CHECK $n\"" "$dir/stdout"; then
        echo "retire_check: $v N=$n failed: $(grep -h -m1 -E 'ERROR|CHECK' "$dir/stdout" "$dir/stderr")" >&2
        exit 1
    fi
    awk '/^(summary|totals):/ { print $2; exit }' "$dir/cg.out"
}

echo "# retire_check: postgres $("$PGBIN/postgres" --version | awk '{print $3}') --single ${SETTINGS[*]}; rows=$ROWS N1=$N1 N2=$N2; setup: $STATE"
echo "# variant repeat Ir(N1) Ir(N2) per_write"
for r in $(seq 1 "$REPEAT"); do
    for v in $VARIANTS; do
        a=$(run_one "$v" "$N1" "$r") && b=$(run_one "$v" "$N2" "$r")
        echo "$v $r $a $b $(( (b - a) / (N2 - N1) ))"
    done
done
