#!/usr/bin/env bash
# Writers' TPS while retirement runs, paired against TPS without it:
# interleaved A/B pgbench runs (as test/bench/pgbench.sh does), each round
# running both variants in a rotating order, so drift hits both alike.
#
#   bash test/bench/retire_tps.sh     ROUNDS=5 SECONDS_PER_RUN=15 CLIENTS=2
#
# The writers run the cookbook's job queue (test/bench/retire_state.sh's
# job: insert, fencing_acquire, fenced_update, release, fenced_delete, and a
# row-scope insert and delete under the job's token). fencing is preloaded
# with the retirement worker (fencing.retire_naptime = 1 s) in both variants:
#   off  no policy: the worker's rounds find nothing to do;
#   on   fencing_enable_retirement('jobs' | 'events', idle => '1 s'): the
#        worker retires what the writers finish, while they run.
# Reports median TPS (pgbench transactions = jobs) per variant and on/off.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-15}
CLIENTS=${CLIENTS:-2}
export FENCING_PGPORT=${FENCING_PGPORT:-54392}
CLUSTER_ROOT=${FENCING_CLUSTER_DIR:-/tmp/fencing-cluster-$FENCING_PGPORT}
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
WORK=$(mktemp -d)
trap 'test/cluster.sh stop; rm -rf "$WORK"' EXIT
test/cluster.sh stop
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -c "ALTER SYSTEM SET synchronous_commit = off" -c "ALTER SYSTEM SET shared_preload_libraries = 'fencing'"
printf "fencing.retire_databases = 'postgres'\nfencing.retire_naptime = 1\n" |
    as_server_user tee -a "$CLUSTER_ROOT/data/postgresql.conf" >/dev/null
as_server_user "$(pg_config --bindir)/pg_ctl" -D "$CLUSTER_ROOT/data" -l "$CLUSTER_ROOT/server.log" -w restart >/dev/null
psql -X -q -o /dev/null -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION fencing;
CREATE SEQUENCE job_ids;
CREATE TABLE jobs (id bigint PRIMARY KEY, payload text NOT NULL,
                   status text NOT NULL DEFAULT 'queued', worker text, fence fencing_token);
SELECT fencing_protect('jobs', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'jobs', require_token => false);
CREATE TABLE events (id bigint PRIMARY KEY, note text, fence fencing_token);
SELECT fencing_protect('events');
SELECT fencing_enable_retirement('jobs', idle => '1 s');
SELECT fencing_enable_retirement('events'::regclass, idle => '1 s');
SELECT fencing_disable_retirement('jobs');
SELECT fencing_disable_retirement('events'::regclass);
SQL
sed -n '/^cat >"\$WORK\/job.sql" <<.SQL.$/,/^SQL$/p' test/bench/retire_state.sh | sed '1d;$d' >"$WORK/job.sql"

declare -A TPS
run() {  # variant round
    local v=$1 retired_before
    if [ "$v" = on ]; then
        psql -X -q -o /dev/null -c "SELECT fencing_enable_retirement('jobs', idle => '1 s')" \
            -c "SELECT fencing_enable_retirement('events'::regclass, idle => '1 s')"
    else
        psql -X -q -o /dev/null -c "SELECT fencing_disable_retirement('jobs')" \
            -c "SELECT fencing_disable_retirement('events'::regclass)"
    fi
    retired_before=$(psql -X -At -c "SELECT (SELECT retired FROM fencing.resource_floor) + (SELECT retired FROM fencing.tombstone_floor)")
    local tps
    tps=$(pgbench -n -c "$CLIENTS" -j "$CLIENTS" -T "$SECONDS_PER_RUN" -f "$WORK/job.sql" 2>&1 |
        awk '/^tps = / { print $3 }')
    local retired
    retired=$(psql -X -At -c "SELECT (SELECT retired FROM fencing.resource_floor) + (SELECT retired FROM fencing.tombstone_floor) - $retired_before")
    TPS[$v]="${TPS[$v]:-} $tps"
    echo "round $2 $v: tps $tps, entries retired during the run $retired"
}
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then run off "$r"; run on "$r"; else run on "$r"; run off "$r"; fi
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
off=$(echo "${TPS[off]}" | median)
on=$(echo "${TPS[on]}" | median)
echo "median tps: off $off, on $on, on/off $(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.3f", a / b }')"
