#!/usr/bin/env bash
# PostgreSQL 19's REPACK (which replaces VACUUM FULL and CLUSTER) under
# raisers: test/repack/stress.py with REPACK_REWRITES=repack against a
# database of its own on the running server (the libpq variables), with the
# tables of test/repack/schema.sql. REPACK, REPACK ... USING INDEX and REPACK
# (CONCURRENTLY) of every fencing table and of a protected table per scope,
# while raisers write in every scope and a leaser acquires; commit order
# recorded; a stale probe after each rewrite. Prints "ok N - ..." lines.
# Run by test/matrix/run.sh on 19 (suite pg19).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export PGDATABASE=fencing_repack19
PGOPTIONS='-c client_min_messages=warning' psql -X -q -d postgres \
    -c "DROP DATABASE IF EXISTS $PGDATABASE" -c "CREATE DATABASE $PGDATABASE" || exit 1
{
    echo "CREATE EXTENSION fencing;"
    cat test/repack/schema.sql
} | psql -X -q -v ON_ERROR_STOP=1 >/dev/null || exit 1
REPACK_REWRITES=repack REPACK_WORKERS=${REPACK_WORKERS:-6} timeout 600 /usr/bin/python3 test/repack/stress.py
rc=$?
psql -X -q -d postgres -c "DROP DATABASE $PGDATABASE" >/dev/null 2>&1
exit $rc
