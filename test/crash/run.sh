#!/usr/bin/env bash
# kill -9 durability: acknowledged fenced writes and their HWM raises (row
# tokens, tombstones, resource and table HWMs) survive an immediate crash of the
# whole server, and stale writes are still refused after crash recovery. Then
# rounds of kill -9 while writers under synchronous_commit = off raise HWMs in
# every scope: no acknowledged raise may be lost (the durability rule). Last,
# rounds of kill -9 under lease clients: no lease token is issued twice.
# Uses its own scratch cluster. Prints "ok N - ..." lines and a summary line.
#   FENCING_CRASH_ROUNDS   rounds of kill -9 under load (default 6)
#   FENCING_CRASH_LEASE_ROUNDS  rounds of kill -9 under lease clients (default 10)
set -uo pipefail
cd "$(dirname "$0")/../.."
export FENCING_PGPORT=${FENCING_CRASH_PGPORT:-54399}
# Its own cluster directory, never the caller's (test/run-all.sh keeps one running).
export FENCING_CLUSTER_DIR=/tmp/fencing-cluster-$FENCING_PGPORT
test/cluster.sh stop
trap 'test/cluster.sh stop' EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
DATA=/tmp/fencing-cluster-$FENCING_PGPORT/data
source test/lib/checks.sh
q() { psql -X -At -q -c "$1" 2>&1; }
sqlstate() { sqlstate_of "$1"; }

psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 10, 33), ('b', 10, 33);
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
SQL
# Acknowledged (committed) writes, each raising an HWM ...
q "UPDATE inventory SET stock = 9, fence = 34 WHERE item = 'a'" >/dev/null
q "BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inventory WHERE item = 'b'; COMMIT;" >/dev/null
q "INSERT INTO orders VALUES (1, 's1', 50)" >/dev/null
q "INSERT INTO ledger VALUES (1, 60)" >/dev/null
# ... and one in flight when the server dies: never acknowledged, must vanish.
psql -X -q -c "BEGIN; UPDATE inventory SET fence = 99 WHERE item = 'a'; SELECT pg_sleep(30);" >/dev/null 2>&1 &
sleep 1

# The whole server at once: every backend and the postmaster; then recovery.
crash_and_restart() {
    local pid
    pid=$(head -1 "$DATA/postmaster.pid")
    pkill -9 -P "$pid"
    kill -9 "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    while pgrep -P "$pid" >/dev/null 2>&1; do sleep 0.1; done
    rm -f "$DATA/postmaster.pid"
    test/cluster.sh start
}
crash_and_restart
check "server recovered after kill -9" "1" "$(q 'SELECT 1')"

check "row token survived" "34" "$(q "SELECT fence FROM inventory WHERE item = 'a'")"
check "tombstone survived" "40" "$(q "SELECT fencing_high_water('inventory', '{\"item\": \"b\"}')")"
check "resource HWM survived" "50" "$(q "SELECT fencing_resource_high_water('s1')")"
check "table HWM survived" "60" "$(q "SELECT fencing_high_water('ledger')")"
check "stale UPDATE refused after recovery" "TF001" "$(sqlstate "UPDATE inventory SET fence = 33 WHERE item = 'a'")"
check "stale re-INSERT refused after recovery" "TF001" "$(sqlstate "INSERT INTO inventory VALUES ('b', 1, 39)")"
check "stale resource write refused after recovery" "TF001" "$(sqlstate "INSERT INTO orders VALUES (2, 's1', 49)")"
check "unacknowledged in-flight write did not survive" "34" "$(q "SELECT fence FROM inventory WHERE item = 'a'")"

# --- Rounds of kill -9 under load, synchronous_commit = off ---------------------
# One writer per scope, each in one psql session that says SET synchronous_commit
# = off and then commits write after write, token 1, 2, 3, ...; after each
# COMMIT returns, psql prints the token (\echo runs only once the statement
# before it has succeeded), so the last line of a writer's file is the last
# acknowledged token. After kill -9 and recovery every scope's HWM must be at
# least that token and a write with (last acknowledged - 1) must be refused.
ROUNDS=${FENCING_CRASH_ROUNDS:-6}
ACKS=$(mktemp -d)
trap 'test/cluster.sh stop; rm -rf "$ACKS"' EXIT

# writer NAME TEMPLATE [TEMPLATE_FOR_EVEN_TOKENS]: @T@ is replaced by the token.
writer() {
    awk -v odd="$2" -v even="${3:-$2}" 'BEGIN {
        print "SET synchronous_commit = off;"
        for (t = 1; ; t++) {
            s = (t % 2) ? odd : even
            gsub(/@T@/, t, s)
            print s
            print "\\echo " t
        }
    }' | psql -X -q -v ON_ERROR_STOP=1 >"$ACKS/$1" 2>"$ACKS/$1.err"
}
last_ack() { tail -1 "$ACKS/$1" 2>/dev/null | grep -E '^[0-9]+$' || echo 0; }

lost_total=0
acked_total=0
for r in $(seq 1 "$ROUNDS"); do
    psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE TABLE w_row_$r (item text PRIMARY KEY, fence fencing_token);
INSERT INTO w_row_$r VALUES ('w', 0);
CREATE TABLE w_tomb_$r (id int PRIMARY KEY, fence fencing_token);
CREATE TABLE w_res_$r (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('w_res_$r', scope => 'resource', resource_column => 'shard');
CREATE TABLE w_tab_$r (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('w_tab_$r', scope => 'table');
SQL
    # Row scope: the row's token rises. Tombstones: odd tokens re-insert key 1,
    # even ones delete it (a DELETE whose only raise is the tombstone). Resource
    # and table scope: a new row per write, the first one inserts the HWM.
    writer row "UPDATE w_row_$r SET fence = @T@ WHERE item = 'w';" &
    writer tomb "INSERT INTO w_tomb_$r VALUES (1, @T@);" \
        "BEGIN; SET LOCAL fencing.token = @T@; DELETE FROM w_tomb_$r WHERE id = 1; COMMIT;" &
    writer res "INSERT INTO w_res_$r VALUES (@T@, 'r$r', @T@);" &
    writer tab "INSERT INTO w_tab_$r VALUES (@T@, @T@);" &
    sleep "1.$((RANDOM % 10))"
    crash_and_restart
    wait
    for scope in row tomb res tab; do
        last=$(last_ack $scope)
        acked_total=$((acked_total + last))
        case $scope in
            row)
                hwm=$(q "SELECT fence FROM w_row_$r WHERE item = 'w'")
                stale="UPDATE w_row_$r SET fence = $((last - 1)) WHERE item = 'w'" ;;
            tomb)
                hwm=$(q "SELECT fencing_high_water('w_tomb_$r', '{\"id\": 1}')")
                # The last acknowledged DELETE's tombstone, on its own.
                deleted=$((last - last % 2))
                tomb=$(q "SELECT coalesce(max(hwm), 0) FROM fencing.row_tombstone WHERE relid = 'w_tomb_$r'::regclass")
                [ "$tomb" -ge "$deleted" ] 2>/dev/null || hwm="$tomb(tombstone)"
                stale="INSERT INTO w_tomb_$r VALUES (1, $((last - 1))) ON CONFLICT (id) DO UPDATE SET fence = excluded.fence" ;;
            res)
                hwm=$(q "SELECT fencing_resource_high_water('r$r')")
                stale="INSERT INTO w_res_$r VALUES (-1, 'r$r', $((last - 1)))" ;;
            tab)
                hwm=$(q "SELECT fencing_high_water('w_tab_$r')")
                stale="INSERT INTO w_tab_$r VALUES (-1, $((last - 1)))" ;;
        esac
        if [ "$hwm" -ge "$last" ] 2>/dev/null && [ "$last" -gt 0 ]; then
            verdict=kept
        else
            verdict="lost (HWM '$hwm')"
            lost_total=$((lost_total + 1))
        fi
        check "round $r, $scope: HWM >= last acknowledged token $last, token $((last - 1)) refused" \
            "kept TF001" "$verdict $(sqlstate "$stale")"
    done
done
echo "# $ROUNDS rounds of kill -9, $acked_total acknowledged raising commits under synchronous_commit = off, $lost_total scopes lost a raise"
check "no acknowledged raise lost over $ROUNDS rounds" "0" "$lost_total"

# --- Lease tokens across kill -9, synchronous_commit = off -----------------------
# Clients acquire and release one resource in a loop under synchronous_commit =
# off, printing each token once fencing_acquire has returned it (autocommit: the
# acquire has committed). After kill -9 and recovery no token may have been
# issued twice, and the first token issued is above every acknowledged one.
LEASE_ROUNDS=${FENCING_CRASH_LEASE_ROUNDS:-10}
LEASE_CLIENTS=3
lease_client() {
    awk -v c="$1" 'BEGIN {
        print "SET synchronous_commit = off;"
        for (;;) {
            print "SELECT fencing_acquire(\x27lease-crash\x27, \x27c" c "\x27, \x272 s\x27, wait => \x2760 s\x27) AS t \\gset"
            print "\\echo :t"
            print "SELECT fencing_release(\x27lease-crash\x27, :t) \\g /dev/null"
        }
    }' | psql -X -q -v ON_ERROR_STOP=1 >"$ACKS/lease$1" 2>"$ACKS/lease$1.err"
}

# A waiter sleeps on its latch and is woken by a committed release.
t0=$(q "SELECT fencing_acquire('lease-wake', 'a', '1 hour')")
(sleep 1; q "SELECT fencing_release('lease-wake', $t0)" >/dev/null) &
woke=$(psql -X -At -c "SELECT extract(epoch FROM clock_timestamp() - now()) < 1.5
                         FROM (SELECT fencing_acquire('lease-wake', 'b', '1 hour', wait => '20 s') AS t) s
                        WHERE t IS NOT NULL")
wait
check "a waiter is woken by the release (within 0.5 s of it), not by its 20 s wait" "t" "$woke"

: >"$ACKS/lease-all"
lease_bad=0
for r in $(seq 1 "$LEASE_ROUNDS"); do
    for c in $(seq 1 $LEASE_CLIENTS); do lease_client "$c" & done
    sleep "1.$((RANDOM % 10))"
    crash_and_restart
    wait
    cat "$ACKS"/lease[0-9] | grep -E '^[0-9]+$' >"$ACKS/lease-round"
    acked=$(wc -l <"$ACKS/lease-round")
    max_acked=$(sort -n "$ACKS/lease-round" | tail -1)
    cat "$ACKS/lease-round" >>"$ACKS/lease-all"
    # A lease acknowledged just before the crash (or a release lost with it)
    # stays live for up to its 2 s TTL.
    first=$(q "SELECT fencing_acquire('lease-crash', 'check', '1 s', wait => '10 s')")
    echo "$first" >>"$ACKS/lease-all"
    if [ "$acked" -gt 0 ] && [ "$first" -gt "$max_acked" ] 2>/dev/null; then
        verdict=above
    else
        verdict="not above ($first after $acked tokens, max ${max_acked:-none})"
        lease_bad=$((lease_bad + 1))
    fi
    check "lease round $r: $acked tokens acknowledged, first token after recovery ($first) above them all" \
        "above" "$verdict"
    q "SELECT fencing_release('lease-crash', $first)" >/dev/null
done
lease_total=$(wc -l <"$ACKS/lease-all")
lease_dups=$(sort -n "$ACKS/lease-all" | uniq -d | wc -l)
echo "# $LEASE_ROUNDS rounds of kill -9, $lease_total lease tokens acknowledged under synchronous_commit = off, $lease_dups issued twice"
check "no lease token issued twice over $LEASE_ROUNDS rounds ($lease_total tokens)" "0" "$lease_dups"
check "every round's first token after recovery was above every acknowledged one" "0" "$lease_bad"

finish
