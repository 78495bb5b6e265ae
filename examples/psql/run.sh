#!/usr/bin/env bash
# The psql example: fencing.psql must succeed; stale.psql must stop with
# psql's exit status 3 and a TF001 error.
set -uo pipefail
cd "$(dirname "$0")"
psql -X -q -v ON_ERROR_STOP=1 -f fencing.psql || { echo "not ok - fencing.psql exited $?"; exit 1; }
err=$(psql -X -q -v ON_ERROR_STOP=1 -f stale.psql 2>&1 >/dev/null)
rc=$?
psql -X -q -c 'DROP TABLE IF EXISTS ex_psql_stale' >/dev/null
if [ $rc -eq 3 ] && grep -q 'ERROR:  TF001: stale fencing token for table public.ex_psql_stale' <<<"$err" &&
    grep -q 'DETAIL:  Key (item)=(SKU-001): offered token 33 is below the high-water mark 34.' <<<"$err"; then
    echo "ok - stale.psql stopped with exit status 3 and TF001"
else
    echo "not ok - stale.psql: exit $rc, stderr: $err"
    exit 1
fi
