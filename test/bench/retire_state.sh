#!/usr/bin/env bash
# The state-size curve of the cookbook's job queue, with and without
# retirement: rows and bytes of every fencing.* table, sampled while JOBS jobs
# run, to bench/data/retire-state-<mode>.csv (elapsed_s, jobs_done, table,
# rows, bytes), then bench/plots/retire-state.svg (gnuplot) from both CSVs.
#
#   bash test/bench/retire_state.sh                 JOBS=1000000 CLIENTS=4 MODES="off on"
#   JOBS=100000 SAMPLE_S=5 bash test/bench/retire_state.sh
#   OUT=/tmp/x PLOTS=/tmp/x MODES=on ...            elsewhere than bench/data, bench/plots
#
# Each job, as docs/cookbook.md's job queue does it, in its own transactions:
# INSERT the job (no token), fencing_acquire() a lease on it (namespace
# 'jobs'), fenced_update() it to done, fencing_release(), fenced_delete();
# and an INSERT and a DELETE of a row-scope table's row under the job's token
# (a tombstone each). Tokens come from the database's leases only, the
# precondition of retirement. CLIENTS pgbench clients share the jobs.
#
# Mode "on": fencing_enable_retirement('jobs' | 'events', idle => IDLE) and
# the retirement worker (fencing preloaded, fencing.retire_databases,
# fencing.retire_naptime = NAPTIME). Mode "off": the same server, no policy.
# The scratch cluster runs with fsync = off and synchronous_commit = off: the
# curve is about state size, not durability or speed (say so when quoting it).
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=${JOBS:-1000000}
CLIENTS=${CLIENTS:-4}
MODES=${MODES:-off on}
SAMPLE_S=${SAMPLE_S:-5}
IDLE=${IDLE:-1 s}
NAPTIME=${NAPTIME:-1}
export FENCING_PGPORT=${FENCING_PGPORT:-54391}
OUT=${OUT:-bench/data}
mkdir -p "$OUT" "${PLOTS:=bench/plots}"
make -s >/dev/null && make -s install >/dev/null
WORK=$(mktemp -d)
trap 'test/cluster.sh stop; rm -rf "$WORK"' EXIT

cat >"$WORK/job.sql" <<'SQL'
SELECT nextval('job_ids') AS id \gset
INSERT INTO jobs (id, payload) VALUES (:id, 'resize image');
SELECT fencing_acquire(:id::text, 'worker-' || :client_id, '1 min', namespace => 'jobs') AS t \gset
SELECT fenced_update('jobs', :t, jsonb_build_object('id', :id), '{"status": "done"}');
SELECT fencing_release(:id::text, :t, namespace => 'jobs');
SELECT fenced_delete('jobs', :t, jsonb_build_object('id', :id));
BEGIN;
SELECT set_config('fencing.token', :t::text, true);
INSERT INTO events (id, note) VALUES (:id, 'job done');
DELETE FROM events WHERE id = :id;
COMMIT;
SQL

CLUSTER_ROOT=${FENCING_CLUSTER_DIR:-/tmp/fencing-cluster-$FENCING_PGPORT}
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
restart_cluster() {  # test/cluster.sh has no restart: the settings above need one
    as_server_user "$(pg_config --bindir)/pg_ctl" -D "$CLUSTER_ROOT/data" \
        -l "$CLUSTER_ROOT/server.log" -w restart >/dev/null
}

sample() {  # mode, start epoch: one line per fencing.* table
    psql -X -At -F, -v ON_ERROR_STOP=1 <<SQL
SELECT round(extract(epoch FROM clock_timestamp()) - $2, 1),
       (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM job_ids) -
       (SELECT count(*) FROM jobs),
       c.relname,
       (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM fencing.%I', c.relname),
                                           false, true, '')))[1]::text::int8,
       pg_catalog.pg_total_relation_size(c.oid)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'fencing' AND c.relkind = 'r'
 ORDER BY c.relname;
SQL
}

run_mode() {
    local mode=$1 csv=$OUT/retire-state-$1.csv
    test/cluster.sh stop
    test/cluster.sh start
    eval "$(test/cluster.sh env)"
    psql -X -q -v ON_ERROR_STOP=1 <<SQL
ALTER SYSTEM SET fsync = off;
ALTER SYSTEM SET synchronous_commit = off;
ALTER SYSTEM SET shared_preload_libraries = 'fencing';
SQL
    # Settings of a library not loaded yet: into the file, not ALTER SYSTEM.
    printf "fencing.retire_databases = 'postgres'\nfencing.retire_naptime = %s\n" "$NAPTIME" |
        as_server_user tee -a "$CLUSTER_ROOT/data/postgresql.conf" >/dev/null
    restart_cluster
    psql -X -q -o /dev/null -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION fencing;
CREATE SEQUENCE job_ids;
CREATE TABLE jobs (id bigint PRIMARY KEY, payload text NOT NULL,
                   status text NOT NULL DEFAULT 'queued', worker text, fence fencing_token);
SELECT fencing_protect('jobs', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'jobs', require_token => false);
CREATE TABLE events (id bigint PRIMARY KEY, note text, fence fencing_token);
SELECT fencing_protect('events');
SQL
    if [ "$mode" = on ]; then
        psql -X -q -v ON_ERROR_STOP=1 -c "SELECT fencing_enable_retirement('jobs', idle => '$IDLE')" \
            -c "SELECT fencing_enable_retirement('events'::regclass, idle => '$IDLE')" >/dev/null
    fi
    local start
    start=$(date +%s.%N)
    echo "elapsed_s,jobs_done,table,rows,bytes" >"$csv"
    pgbench -n -c "$CLIENTS" -j "$CLIENTS" -t $((JOBS / CLIENTS)) -f "$WORK/job.sql" \
        >"$WORK/pgbench-$mode.log" 2>&1 &
    local bench=$!
    while kill -0 "$bench" 2>/dev/null; do
        sample "$mode" "$start" >>"$csv"
        sleep "$SAMPLE_S"
    done
    wait "$bench" || { cat "$WORK/pgbench-$mode.log"; exit 1; }
    # After the last job: one more naptime for the worker, then the end state.
    sleep $((NAPTIME * 3))
    sample "$mode" "$start" >>"$csv"
    grep -E "tps|failed|processed" "$WORK/pgbench-$mode.log" | sed "s/^/$mode: /"
    tail -n +2 "$csv" | awk -F, -v m="$mode" '{last[$3] = $4 " rows " $5 " bytes"} END {for (t in last) print m ": end " t ": " last[t]}' | sort
}

for mode in $MODES; do run_mode "$mode"; done
/usr/bin/python3 test/bench/retire_plot.py "$OUT" "$PLOTS"
