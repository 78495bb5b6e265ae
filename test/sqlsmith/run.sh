#!/usr/bin/env bash
# sqlsmith (Debian) against a database holding the extension and protected
# tables of every scope, on a cluster of its own (so its log can be read and a
# crash cannot disturb other suites). Random queries call every function the
# role can see, fencing's included, with random arguments. The suite fails if
# any server process dies by a signal, an assertion or a PANIC, or if the
# server is not answering afterwards. Prints "ok N - ..." lines.
#
#   SMITH_QUERIES (default 20000)   statements to generate, bounded by SMITH_SECONDS
#   SMITH_SECONDS (default 120)
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/lib/checks.sh
SMITH_QUERIES=${SMITH_QUERIES:-20000}
SMITH_SECONDS=${SMITH_SECONDS:-120}
export FENCING_PGPORT=${SMITH_PGPORT:-54339}
export FENCING_CLUSTER_DIR=/tmp/fencing-cluster-smith-$FENCING_PGPORT
LOG=$FENCING_CLUSTER_DIR/server.log
trap 'bash test/cluster.sh stop' EXIT
bash test/cluster.sh stop
bash test/cluster.sh start
eval "$(bash test/cluster.sh env)"

# The SQLSTATE in every log line, and the statement after every error, so an
# internal error (XX000) can be traced to fencing.
psql -X -q -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] %e '" \
    -c "ALTER SYSTEM SET log_min_messages = error" -c "ALTER SYSTEM SET log_min_error_statement = error" \
    -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE ROLE smith LOGIN;
CREATE DATABASE smith OWNER smith;
\c smith
CREATE EXTENSION fencing;
SET ROLE smith;
-- Row scope, with a tombstone and a strict table.
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory SELECT 'sku-' || g, g, g FROM generate_series(1, 50) g;
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM inventory WHERE item = 'sku-50'; COMMIT;
CREATE TABLE strict_rows (id int PRIMARY KEY, v text, fence bigint);
SELECT fencing_protect('strict_rows', token_column => 'fence', strict => true);
INSERT INTO strict_rows SELECT g, 'v', g FROM generate_series(1, 20) g;
-- Resource scope, two tables sharing a namespace; a composite key.
CREATE TABLE shard_a (id int, part int, shard text, fence fencing_token, PRIMARY KEY (id, part));
SELECT fencing_protect('shard_a', scope => 'resource', resource_column => 'shard', resource_namespace => 'smith');
CREATE TABLE shard_b (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('shard_b', scope => 'resource', resource_column => 'shard', resource_namespace => 'smith');
INSERT INTO shard_a SELECT g, g % 3, 's' || (g % 4), 10 FROM generate_series(1, 40) g;
INSERT INTO shard_b SELECT g, 's' || (g % 4), 10 FROM generate_series(1, 40) g;
-- Table scope, skip on stale; a partitioned table.
CREATE TABLE ledger (id int PRIMARY KEY, amount numeric, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table', on_stale => 'skip');
INSERT INTO ledger SELECT g, g, g FROM generate_series(1, 30) g;
CREATE TABLE events (id int, day int, fence fencing_token, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM (0) TO (100);
CREATE TABLE events_2 PARTITION OF events FOR VALUES FROM (100) TO (200);
INSERT INTO events SELECT g, g % 200, g FROM generate_series(1, 60) g;
SELECT fencing_acquire('job-' || g, 'smith', '1 hour', namespace => 'smith') FROM generate_series(1, 5) g;
SELECT fencing_resource_advance('s1', 50, 'smith');
SQL
[ $? -eq 0 ] || { echo "not ok 1 - setup failed"; echo "0 passed, 1 failed"; exit 1; }

started=$(date +%s)
seed=${SMITH_SEED:-$$}
echo "# sqlsmith seed $seed (SMITH_SEED=$seed reproduces the run)"
timeout "$SMITH_SECONDS" sqlsmith --verbose --seed="$seed" --max-queries="$SMITH_QUERIES" \
    --target="host=$PGHOST port=$PGPORT dbname=smith user=smith" >"$FENCING_CLUSTER_DIR/smith.out" 2>&1
rc=$?
elapsed=$(($(date +%s) - started))
# sqlsmith's verbose progress ends with "queries: N" style counters; count the
# statements the server saw instead, which does not depend on its output format.
stmts=$(psql -X -At -d smith -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'smith'")
echo "# sqlsmith exit $rc after ${elapsed}s; transactions in database smith: $stmts"
{ tail -5 "$FENCING_CLUSTER_DIR/smith.out"; echo; } | sed "/^$/d; s/^/# /"

check "sqlsmith ran a bounded number of statements (rc 0, or stopped by the time bound)" "yes" \
    "$([ $rc -eq 0 ] || [ $rc -eq 124 ] && echo yes || echo "no (rc $rc)")"
check "at least 1000 transactions reached the server" "yes" "$([ "${stmts:-0}" -ge 1000 ] && echo yes || echo "no ($stmts)")"
check "no server process died by a signal" "0" "$(grep -c 'terminated by signal' "$LOG")"
check "no assertion failure or PANIC" "0" "$(grep -cE 'TRAP:|PANIC:' "$LOG")"
# An XX000 error line and the STATEMENT line after it: fencing's if either names it.
internal=$(awk '/ XX000 +ERROR: / {e=$0; getline s; if ((e s) ~ /fencing/) n++} END {print n+0}' "$LOG")
check "no internal error (XX000) raised in a statement calling fencing" "0" "$internal"
echo "# errors raised by fencing's functions: $(grep -cE 'ERROR: .*(fencing|fenced|token|high-water|lease)' "$LOG")"
grep -E ' XX000 +ERROR: ' "$LOG" | head -5 | sed 's/^/# other internal error: /'
check "server still answers, and the stale-write guard still holds" "TF001" \
    "$(sqlstate_of "UPDATE inventory SET stock = 0, fence = 1 WHERE item = 'sku-10'" -d smith -U smith)"
finish
