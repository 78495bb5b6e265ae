#!/usr/bin/env bash
# Memory: a backend's anonymous RSS stays flat over CALLS fenced_update()
# calls in one session, and over CALLS transparent-mode transactions (BEGIN;
# SET LOCAL fencing.token; UPDATE; COMMIT) in one session.
#
# One pgbench client (one connection, so one backend) runs CALLS
# transactions; the backend's RssAnon (/proc/PID/status) is sampled every
# 0.2 s. "Before" is the first sample after WARMUP_S seconds (plans, caches
# and the library loaded), "after" the last sample before the session ends;
# the check fails if after - before exceeds LIMIT_KB (2 MB) or 10% of before,
# whichever is larger.
#
# Runs against the server the libpq environment names (test/run-all.sh runs
# it as suite "memory" on its scratch cluster with CALLS=100000; make bench
# runs it with CALLS=1000000 through test/bench/report.sh), in a database of
# its own; the server must run on this machine. Prints "ok N - ..." lines and,
# if OUT is set, appends a line per check to OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source test/lib/checks.sh
CALLS=${CALLS:-100000}
WARMUP_S=${WARMUP_S:-2}
LIMIT_KB=${LIMIT_KB:-2048}
OUT=${OUT:-}
DB=fencing_memory
PGOPTIONS='-c client_min_messages=warning' psql -X -q -d postgres \
    -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" || exit 1
export PGDATABASE=$DB
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || exit 1
CREATE EXTENSION fencing;
CREATE TABLE fenced (id int PRIMARY KEY, val int, tok fencing_token) WITH (fillfactor = 50);
CREATE TABLE transparent (id int PRIMARY KEY, val int, tok fencing_token) WITH (fillfactor = 50);
INSERT INTO fenced SELECT g, 0, 5 FROM generate_series(1, 1000) g;
INSERT INTO transparent SELECT g, 0, 5 FROM generate_series(1, 1000) g;
SQL
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/fupdate.sql" <<'SQL'
\set id random(1, 1000)
SELECT fenced_update('fenced', 5, jsonb_build_object('id', (:id)::int), '{"val": 1}');
SQL
cat >"$WORK/transparent.sql" <<'SQL'
\set id random(1, 1000)
BEGIN;
SET LOCAL fencing.token = 5;
UPDATE transparent SET val = val + 1 WHERE id = :id;
COMMIT;
SQL

rss_kb() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

measure() {  # measure NAME TABLE: one session of CALLS transactions
    local name=$1 table=$2
    local app=fencing_memory_$name
    PGAPPNAME=$app pgbench -n -M prepared -c 1 -t "$CALLS" -f "$WORK/$name.sql" \
        >"$WORK/$name.out" 2>"$WORK/$name.err" &
    local bench=$! pid="" t0=$SECONDS
    local before="" after="" peak=0 now start_s=$SECONDS
    while kill -0 "$bench" 2>/dev/null; do
        # pgbench may open a short-lived connection before the session that
        # runs the transactions: when the backend found is gone while pgbench
        # still runs, look again (the newest backend of the application) and
        # start the samples over.
        if [ -z "$pid" ] || [ ! -e "/proc/$pid/status" ]; then
            pid=$(psql -X -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'
                                  ORDER BY backend_start DESC LIMIT 1" 2>/dev/null)
            before="" after="" peak=0 start_s=$SECONDS
            [ -n "$pid" ] || { sleep 0.05; continue; }
        fi
        now=$(rss_kb "$pid")
        if [ -n "$now" ]; then
            after=$now
            [ "$now" -gt "$peak" ] && peak=$now
            [ -z "$before" ] && [ $((SECONDS - start_s)) -ge "$WARMUP_S" ] && before=$now
        fi
        sleep 0.2
    done
    wait "$bench"
    local rc=$?
    local tps
    tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$WORK/$name.out")
    local done_tx
    done_tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/$name.out")
    check "$name: pgbench ran $CALLS transactions in one session" "0 $CALLS" "$rc ${done_tx:-0}"
    # Every transaction updated a row (the statistics the ended session
    # flushed at exit).
    local updated=0
    for _ in $(seq 50); do
        updated=$(psql -X -At -c "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relid = '$table'::regclass")
        [ "$updated" = "$CALLS" ] && break
        sleep 0.1
    done
    check "$name: every write admitted (rows updated)" "$CALLS" "$updated"
    [ -n "$before" ] || before=$after
    local growth=$((${after:-0} - ${before:-0}))
    local limit=$LIMIT_KB
    [ $((${before:-0} / 10)) -gt "$limit" ] && limit=$((before / 10))
    local verdict=flat
    [ -n "$after" ] && [ "$growth" -le "$limit" ] || verdict="grew"
    check "$name: backend RssAnon flat over $CALLS transactions (${before:-?} kB -> ${after:-?} kB, peak $peak kB, growth $growth kB, limit $limit kB; $(printf '%.0f' "${tps:-0}") tx/s, $((SECONDS - t0)) s)" \
        flat "$verdict"
    [ -n "$OUT" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$CALLS" "$before" "$after" "$peak" "$growth" \
        "$(printf '%.0f' "${tps:-0}")" >>"$OUT"
}

if [ -n "$OUT" ]; then
    mkdir -p "$(dirname "$OUT")"
    {
        echo "# memory $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null) postgres $(psql -X -At -c 'SHOW server_version'); RssAnon of the session's backend, kB; before = after ${WARMUP_S}s"
        printf 'workload\ttransactions\tbefore_kb\tafter_kb\tpeak_kb\tgrowth_kb\ttx_per_s\n'
    } >"$OUT"
fi
measure fupdate fenced
measure transparent transparent
psql -X -q -d postgres -c "DROP DATABASE $DB" || true
finish
