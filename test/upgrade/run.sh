#!/usr/bin/env bash
# pg_upgrade keeps every guard: state in every scope on an old cluster,
# pg_upgrade (PostgreSQL 15 -> 15, --link) into a new one, then every guard is
# present and current and stale writes are refused in every scope. Two scratch
# clusters of its own (private ports and sockets), run as the server user.
# Prints "ok N - ..." lines and a summary line.
set -uo pipefail
cd "$(dirname "$0")/../.."
source test/lib/checks.sh
PGBIN=$(pg_config --bindir)
OLD_PORT=${FENCING_UPGRADE_PGPORT:-54391}
NEW_PORT=$((OLD_PORT + 1))
ROOT=$(mktemp -d /tmp/fencing-upgrade.XXXXXX)
SOCK=$ROOT/sock
as_server_user() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[ "$(id -u)" = 0 ] && chown postgres: "$ROOT"
as_server_user mkdir -p "$SOCK" "$ROOT/work"
cleanup() {
    for d in old new; do
        [ -f "$ROOT/$d/postmaster.pid" ] && as_server_user "$PGBIN/pg_ctl" -D "$ROOT/$d" -m immediate -w stop >/dev/null 2>&1
    done
    rm -rf "$ROOT"
}
trap cleanup EXIT
init() {  # init DIR PORT
    as_server_user "$PGBIN/initdb" -D "$1" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    cat >>"$1/postgresql.conf" <<CONF
port = $2
listen_addresses = ''
unix_socket_directories = '$SOCK'
CONF
}
start() { as_server_user "$PGBIN/pg_ctl" -D "$1" -l "$1.log" -w -t 60 start >/dev/null; }
stop() { as_server_user "$PGBIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null; }
export PGHOST=$SOCK PGUSER=postgres PGDATABASE=fenced
q() { psql -X -At -q -c "$1" 2>&1; }
sqlstate() { sqlstate_of "$1"; }

init "$ROOT/old" "$OLD_PORT"
init "$ROOT/new" "$NEW_PORT"
start "$ROOT/old"
export PGPORT=$OLD_PORT
psql -X -q -d postgres -c "CREATE DATABASE fenced" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10), ('b', 1, 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM inventory WHERE item = 'b'; COMMIT;
-- a dropped column: attnums after it must survive the upgrade
CREATE TABLE orders (id int PRIMARY KEY, junk int, shard text, fence bigint);
ALTER TABLE orders DROP COLUMN junk;
SELECT fencing_protect('orders', token_column => 'fence', scope => 'resource',
                       resource_column => 'shard', resource_namespace => 'orders');
INSERT INTO orders VALUES (1, 's', 50);
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
INSERT INTO ledger VALUES (1, 60);
CREATE TABLE events (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE events_a PARTITION OF events FOR VALUES IN ('a');
CREATE TABLE events_b PARTITION OF events FOR VALUES IN ('b');
INSERT INTO events VALUES (1, 'a', 70), (1, 'b', 70);
SQL
guards_before=$(q "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_%'")
# Row scope with a primary key: guard, insert recheck, key-move recheck and
# truncate trigger (inventory, events_a, events_b: 12); orders, ledger: 1 each.
check "old cluster: every guard in place" "4 14" \
    "$(q "SELECT (SELECT count(*) FROM fencing_protected WHERE guard_ok) || ' ' || $guards_before")"
stop "$ROOT/old"

out=$(cd "$ROOT/work" && as_server_user "$PGBIN/pg_upgrade" -b "$PGBIN" -B "$PGBIN" \
    -d "$ROOT/old" -D "$ROOT/new" -p "$OLD_PORT" -P "$NEW_PORT" -s "$SOCK" -U postgres --link 2>&1)
rc=$?
check "pg_upgrade --link succeeds" "0" "$rc"
[ $rc -ne 0 ] && echo "$out" | tail -20
start "$ROOT/new"
export PGPORT=$NEW_PORT

check "new cluster: policies kept" "events|row inventory|row ledger|table orders|resource" \
    "$(q "SELECT string_agg(table_name || '|' || scope, ' ' ORDER BY table_name::text) FROM fencing_protected")"
check "new cluster: every fencing trigger came across" "$guards_before" \
    "$(q "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_%'")"
check "new cluster: every guard present, enabled and current (guard_ok)" "4" \
    "$(q "SELECT count(*) FROM fencing_protected WHERE guard_ok")"
check "new cluster: fencing_verify_guards() finds nothing" "0" \
    "$(q "SELECT count(*) FROM fencing_verify_guards()")"
check "stale UPDATE refused after upgrade (row scope)" "TF001" \
    "$(sqlstate "UPDATE inventory SET fence = 9 WHERE item = 'a'")"
check "stale re-INSERT of a deleted key refused after upgrade (tombstone)" "TF001" \
    "$(sqlstate "INSERT INTO inventory VALUES ('b', 1, 25)")"
check "stale key move onto a deleted key refused after upgrade" "TF001" \
    "$(sqlstate "UPDATE inventory SET item = 'b', fence = 20 WHERE item = 'a'")"
check "stale write refused after upgrade (resource scope, column after a dropped one)" "TF001" \
    "$(sqlstate "INSERT INTO orders VALUES (2, 's', 49)")"
check "stale write refused after upgrade (table scope)" "TF001" \
    "$(sqlstate "INSERT INTO ledger VALUES (2, 59)")"
check "stale write refused after upgrade (partition leaf)" "TF001" \
    "$(sqlstate "UPDATE events SET fence = 1 WHERE k = 'b'")"
check "stale re-INSERT after TRUNCATE refused after upgrade" "TF001" \
    "$(sqlstate "BEGIN; TRUNCATE inventory; INSERT INTO inventory VALUES ('a', 1, 9); COMMIT")"
check "fresh token admitted after upgrade" "1" \
    "$(q "SELECT fenced_update('inventory', 31, '{\"item\": \"a\"}', '{\"stock\": 2}')")"
stop "$ROOT/new"
finish
