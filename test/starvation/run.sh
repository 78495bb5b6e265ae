#!/usr/bin/env bash
# Raises do not starve (issue 11). Eight pgbench clients keep writing at the
# high-water mark (the old holder's token, autocommitted single-row UPDATEs on
# one resource, or on one table-scope table); meanwhile a raise (the new
# holder's fencing_resource_advance(), fencing_advance(), fencing_acquire())
# must get through within LIMIT_MS, and afterwards the old holder's writes are
# refused (TF001).
#
# Writers at the HWM share the HWM lock; a raise asks for it exclusively, and
# PostgreSQL's lock manager queues every later share request behind a waiting
# exclusive one, so the raise waits only for the writes already admitted.
# fencing_acquire is given a wait: without one it only tries, and returns NULL
# while writers hold the lock (issue 29's "at once without a wait").
#
# Runs against the server the libpq environment names (test/run-all.sh runs
# it on its scratch cluster; by hand: eval "$(test/cluster.sh env)" first, or
# make check-starvation), in a database of its own. Prints "ok N - ..." lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/lib/checks.sh
LIMIT_MS=${LIMIT_MS:-2000}
CLIENTS=${CLIENTS:-8}
DB=fencing_starvation
PGOPTIONS='-c client_min_messages=warning' psql -X -q -d postgres \
    -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" || exit 1
export PGDATABASE=$DB
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || exit 1
CREATE EXTENSION fencing;
CREATE TABLE res (id int PRIMARY KEY, shard text NOT NULL, val int, tok fencing_token);
SELECT fencing_protect('res', scope => 'resource', resource_column => 'shard');
INSERT INTO res SELECT g, 'starve', 0, 5 FROM generate_series(1, 1000) g;
CREATE TABLE acq (id int PRIMARY KEY, shard text NOT NULL, val int, tok fencing_token);
SELECT fencing_protect('acq', scope => 'resource', resource_column => 'shard');
INSERT INTO acq SELECT g, 'leased', 0, 5 FROM generate_series(1, 1000) g;
CREATE TABLE tab (id int PRIMARY KEY, val int, tok fencing_token);
SELECT fencing_protect('tab', scope => 'table');
INSERT INTO tab SELECT g, 0, 5 FROM generate_series(1, 1000) g;
SQL
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

ms_now() { echo $(($(date +%s%N) / 1000000)); }

# scenario NAME TABLE RAISE_SQL EXPECTED_RESULT
scenario() {
    local name=$1 table=$2 raise=$3 expected=$4
    printf '\\set id random(1, 1000)\nUPDATE %s SET val = val + 1, tok = 5 WHERE id = :id;\n' \
        "$table" >"$WORK/$name.sql"
    pgbench -n -M prepared -c "$CLIENTS" -j 2 -T 15 -f "$WORK/$name.sql" >"$WORK/$name.log" 2>&1 &
    local pid=$!
    sleep 2
    local before after
    before=$(psql -X -At -c "SELECT sum(val) FROM $table")
    sleep 1
    after=$(psql -X -At -c "SELECT sum(val) FROM $table")
    local start out took
    start=$(ms_now)
    out=$(PGOPTIONS='-c statement_timeout=14s' psql -X -At -c "$raise" 2>&1)
    took=$(($(ms_now) - start))
    wait "$pid"
    local writing=no within=no refused=no
    [ "$after" -gt "$before" ] && writing=yes
    [ "$took" -lt "$LIMIT_MS" ] && within=yes
    grep -q 'stale fencing token' "$WORK/$name.log" && refused=yes
    check "$name: $CLIENTS writers at the HWM were writing ($before -> $after writes in 1 s)" yes "$writing"
    check "$name: the raise succeeded" "$expected" "$out"
    check "$name: the raise got through in ${took} ms (limit ${LIMIT_MS} ms)" yes "$within"
    check "$name: the writers were refused after the raise (TF001)" yes "$refused"
    check "$name: a later write with the old token is refused" TF001 \
        "$(sqlstate_of "UPDATE $table SET val = val + 1, tok = 5 WHERE id = 1")"
}

scenario resource res "SELECT fencing_resource_advance('starve', 6)" t
scenario table tab "SELECT fencing_advance('tab', 6)" t
scenario acquire acq "SELECT fencing_acquire('leased', 'new-holder', '30 s', wait => '5 s')" 6
psql -X -q -d postgres -c "DROP DATABASE $DB"
finish
