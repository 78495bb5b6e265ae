#!/usr/bin/env bash
# INSERT ... ON CONFLICT DO SELECT (PostgreSQL 19) racing a fenced writer of
# the conflicting row: a zombie (token 12) inserts key 1 while a holder with
# token 30 DELETEs the row (a tombstone at 30) or raises it to 30, and commits
# 1.5 s later. DO SELECT [FOR UPDATE | FOR SHARE] waits as DO NOTHING does:
# after a DELETE the key no longer conflicts, so it is an INSERT judged
# against the tombstone (TF001, nothing written); after a raise it returns
# the holder's row and writes nothing. Against the running server (the libpq
# variables), in a database of its own. Prints "ok N - ..." lines.
set -uo pipefail
source "$(dirname "$0")/../lib/checks.sh"
export PGDATABASE=fencing_do_select_race
PGOPTIONS='-c client_min_messages=warning' psql -X -q -d postgres \
    -c "DROP DATABASE IF EXISTS $PGDATABASE" -c "CREATE DATABASE $PGDATABASE" || exit 1
psql -X -q -c "CREATE EXTENSION fencing" || exit 1
i=0
for holder in "DELETE FROM @T@ WHERE id = 1" "UPDATE @T@ SET v = 'raised', fence = 30 WHERE id = 1"; do
    for clause in "DO SELECT FOR UPDATE RETURNING *" "DO SELECT FOR SHARE RETURNING *" \
        "DO SELECT RETURNING *" "DO NOTHING RETURNING *"; do
        i=$((i + 1))
        t=race$i
        psql -X -q -c "CREATE TABLE $t (id int PRIMARY KEY, v text, fence fencing_token)" \
            -c "INSERT INTO $t VALUES (1, 'holder', 10)"
        psql -X -q -At -c "BEGIN; SET LOCAL fencing.token = 30; ${holder//@T@/$t}; SELECT pg_sleep(1.5); COMMIT;" >/dev/null &
        sleep 0.4
        zombie=$(psql -X -At -c "INSERT INTO $t VALUES (1, 'zombie', 12) ON CONFLICT (id) $clause" 2>&1 | head -1)
        wait
        state=$(psql -X -At -c "SELECT coalesce(string_agg(r::text, ' '), 'no row') || ' hwm ' ||
                fencing_high_water('$t', '{\"id\": 1}') FROM $t r")
        if [ "${holder%% *}" = DELETE ]; then
            check "zombie $clause racing a DELETE at 30: refused, the tombstone kept" \
                "ERROR:  stale fencing token for table public.$t|no row hwm 30" "$zombie|$state"
        else
            want="1|raised|30"
            [ "$clause" = "DO NOTHING RETURNING *" ] && want="INSERT 0 0"
            check "zombie $clause racing a raise to 30: the holder's row, nothing written" \
                "$want|(1,raised,30) hwm 30" "$zombie|$state"
        fi
    done
done
psql -X -q -d postgres -c "DROP DATABASE $PGDATABASE" >/dev/null 2>&1
finish
