#!/usr/bin/env bash
# kill -9 under synchronous_commit = off around two-phase commit: a
# transaction raises a row-scope HWM and a resource HWM, PREPARE TRANSACTION
# returns, the postmaster is killed: the prepared transaction must be there
# after recovery; COMMIT PREPARED returns, the postmaster is killed: both
# raises must be there. A control insert committed right after each PREPARE
# (no raise, so nothing forces its flush) shows the crash loses what was not
# flushed. Against a server it may kill (libpq variables; CRASH_PIDFILE,
# CRASH_RESTART as for crash_async.py; max_prepared_transactions > 0), in a
# database of its own. CRASH_CYCLES (default 6). Prints "ok N - ..." lines.
set -uo pipefail
source "$(dirname "$0")/../lib/checks.sh"
CYCLES=${CRASH_CYCLES:-6}
crash() {
    local pm
    pm=$(head -1 "$CRASH_PIDFILE")
    kill -9 "$pm"
    for _ in $(seq 50); do [ -e "/proc/$pm" ] || break; sleep 0.2; done
    for _ in 1 2 3 4 5; do bash -c "$CRASH_RESTART" >/dev/null 2>&1 && return 0; sleep 1; done
    return 1
}
export PGDATABASE=fencing_crash_2pc
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $PGDATABASE" -c "CREATE DATABASE $PGDATABASE" || exit 1
psql -X -q -c "CREATE EXTENSION fencing" -c "CREATE TABLE p (id int PRIMARY KEY, fence fencing_token)" \
    -c "INSERT INTO p VALUES (1, 1)" -c "CREATE TABLE ctl (id int)" || exit 1
lost_ctl=0
for i in $(seq 1 "$CYCLES"); do
    t=$((i * 10))
    timeout 30 psql -X -q -v ON_ERROR_STOP=1 -c "SET synchronous_commit = off" -c "BEGIN" \
        -c "UPDATE p SET fence = $t WHERE id = 1" -c "SELECT fencing_resource_advance('tpc-res', $t)" \
        -c "PREPARE TRANSACTION 'x$i'" -c "INSERT INTO ctl VALUES ($i)" >/dev/null
    check "cycle $i: PREPARE acknowledged" 0 $?
    crash
    check "cycle $i: the prepared transaction survived kill -9" 1 \
        "$(psql -X -At -c "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'x$i'")"
    [ "$(psql -X -At -c "SELECT count(*) FROM ctl WHERE id = $i")" = 1 ] || lost_ctl=$((lost_ctl + 1))
    timeout 30 psql -X -q -v ON_ERROR_STOP=1 -c "SET synchronous_commit = off" -c "COMMIT PREPARED 'x$i'" >/dev/null
    check "cycle $i: COMMIT PREPARED acknowledged" 0 $?
    crash
    check "cycle $i: both raises survived kill -9 (row HWM / resource HWM)" "$t/$t" \
        "$(psql -X -At -c "SELECT fencing_high_water('p', '{\"id\": 1}') || '/' || fencing_resource_high_water('tpc-res')")"
done
echo "# control: an unflushed insert after PREPARE lost in $lost_ctl of $CYCLES crashes"
psql -X -q -d postgres -c "DROP DATABASE $PGDATABASE WITH (FORCE)" >/dev/null 2>&1
finish
