#!/usr/bin/env bash
# The monitoring files against the scratch cluster of test/run-all.sh (libpq
# environment exported): monitoring/postgres_exporter.yml parsed as YAML and
# every query run, every query of monitoring/fencing_alerts.sql run, in a
# database of its own with the extension and a protected table. The
# installcheck server does not preload fencing, so the counters are off here:
# test/t/stats.pl runs the same check on a preloaded server, with counters.
set -uo pipefail
cd "$(dirname "$0")/../.."
DB=fencing_monitoring
psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1' EXIT
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10);
SELECT fencing_acquire('r', 'me', '1 hour');
SQL
/usr/bin/python3 test/monitoring/check.py "$DB"
