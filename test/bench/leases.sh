#!/usr/bin/env bash
# Lease throughput: fencing_acquire + fencing_release cycles per second from 1,
# 4, 8 and 16 clients (pgbench, each call its own transaction; synchronous_commit
# = on, fsync = on: the acquire commits durably, the release, which writes
# nothing else, without waiting for its WAL flush), with P50/P99 cycle latency
# from pgbench's per-transaction log; and, in the same run, a local single-node
# etcd lock acquire+release loop through python3-etcd3 for comparison. Then
# many acquires in one statement (8k, 16k, 32k, 100k fresh resources in one
# SELECT), which must grow linearly.
#
#   bash test/bench/leases.sh      (SECONDS_PER_RUN=5, ROUNDS=3; COMMIT_DELAY/COMMIT_SIBLINGS to tune;
#                                   CLIENTS="1 4 8 16", BULK="8000 16000 32000 100000";
#                                   OUT=FILE also writes the tables there)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-1 4 8 16}
BULK=${BULK:-8000 16000 32000 100000}
COMMIT_DELAY=${COMMIT_DELAY:-0}
COMMIT_SIBLINGS=${COMMIT_SIBLINGS:-5}
export FENCING_PGPORT=${FENCING_PGPORT:-54388}
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
make -s >/dev/null && $SUDO make -s install >/dev/null
test/cluster.sh stop
WORK=$(mktemp -d)
ETCD_PID=
cleanup() {
    [ -n "$ETCD_PID" ] && kill "$ETCD_PID" 2>/dev/null
    test/cluster.sh stop
    rm -rf "$WORK"
}
trap cleanup EXIT
test/cluster.sh start
eval "$(test/cluster.sh env)"
psql -X -q -c "ALTER SYSTEM SET commit_delay = $COMMIT_DELAY" \
    -c "ALTER SYSTEM SET commit_siblings = $COMMIT_SIBLINGS" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION fencing" >/dev/null
# Each client cycles on a resource of its own (no contention, so every
# acquire gets its lease): one acquire and one release, each its own
# transaction with a durable commit.
cat >"$WORK/lease.sql" <<'SQL'
SELECT fencing_acquire('res-' || :client_id, 'bench', '10 seconds') AS tok \gset
SELECT fencing_release('res-' || :client_id, :tok);
SQL
# The floor: plain PostgreSQL doing the same durable work by hand, with no
# extension involved. Two transactions per cycle; the first raises a
# per-resource counter and writes the lease row from it, the second marks the
# lease released if it is still the live one. A lease cycle cannot be cheaper
# than this on the same server.
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE floor_hwm (id int PRIMARY KEY, hwm bigint NOT NULL);
CREATE TABLE floor_lease (id int PRIMARY KEY, holder text, token bigint,
                          acquired_at timestamptz, expires_at timestamptz, released_at timestamptz);
INSERT INTO floor_hwm SELECT g, 0 FROM generate_series(1, 64) g;
INSERT INTO floor_lease SELECT g, NULL, 0, NULL, NULL, NULL FROM generate_series(1, 64) g;
SQL
# The floor for the cheaper release: the same, with the release committed
# without waiting for its WAL flush (synchronous_commit = off for it alone).

cat >"$WORK/floor.sql" <<'SQL'
WITH h AS (UPDATE floor_hwm SET hwm = hwm + 1 WHERE id = :client_id + 1 RETURNING hwm)
UPDATE floor_lease SET holder = 'bench', token = h.hwm, acquired_at = clock_timestamp(), expires_at = clock_timestamp() + interval '10 seconds', released_at = NULL FROM h WHERE id = :client_id + 1 RETURNING token AS tok \gset
UPDATE floor_lease SET released_at = clock_timestamp() WHERE id = :client_id + 1 AND token = :tok AND released_at IS NULL AND expires_at > clock_timestamp();
SQL
{
    sed -n 1,2p "$WORK/floor.sql"
    echo 'BEGIN;'
    echo 'SET LOCAL synchronous_commit = off;'
    sed -n 3p "$WORK/floor.sql"
    echo 'COMMIT;'
} >"$WORK/floor_async.sql"
chmod -R a+rX "$WORK"
percentile() {  # percentile P FILE...: latency (ms) at percentile P of pgbench logs
    cat "${@:2}" | awk '{print $3}' | sort -n |
        awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100); if (i<1) i=1; printf "%.2f", a[i]/1000}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run_pgbench() {  # run_pgbench SCRIPT CLIENTS LOGDIR: prints tps
    mkdir -p "$3"
    (cd "$3" && pgbench -n -M prepared -c "$2" -j "$2" -T "$SECONDS_PER_RUN" -l \
        -f "$WORK/$1.sql" 2>"$WORK/pgbench.err" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p') || true
}
# Interleaved rounds (lease, floor, floor, lease, ...) so machine noise falls
# on both variants alike; medians of ROUNDS rounds; pgbench with prepared
# statements (-M prepared), as a driver would run them.
OUT=${OUT:-/dev/null}
exec > >(tee -a "$OUT")
echo "| clients | lease cycles/s | P50 ms | P99 ms | floor cycles/s | lease/floor | floor, release async cycles/s | lease/that floor |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
for c in $CLIENTS; do
    rm -rf "$WORK"/log-* "$WORK"/tps-*
    for r in $(seq 1 "$ROUNDS"); do
        order="lease floor floor_async"
        [ $((r % 2)) = 0 ] && order="floor_async floor lease"
        for v in $order; do
            tps=$(run_pgbench "$v" "$c" "$WORK/log-$v")
            [ -n "$tps" ] || { cat "$WORK/pgbench.err"; exit 1; }
            echo "$tps" >>"$WORK/tps-$v"
        done
    done
    lease=$(median <"$WORK/tps-lease")
    floor=$(median <"$WORK/tps-floor")
    floor_async=$(median <"$WORK/tps-floor_async")
    echo "$c $lease" >>"$WORK/results"
    echo "| $c | ${lease%.*} | $(percentile 50 "$WORK"/log-lease/pgbench_log.*) |" \
        "$(percentile 99 "$WORK"/log-lease/pgbench_log.*) | ${floor%.*} |" \
        "$(awk -v a="$lease" -v b="$floor" 'BEGIN {printf "%.2f", a / b}') | ${floor_async%.*} |" \
        "$(awk -v a="$lease" -v b="$floor_async" 'BEGIN {printf "%.2f", a / b}') |"
done

# Many acquires in one statement, each of a fresh resource: seconds per
# statement and microseconds per lease (linear: the last column stays flat).
echo
echo "| leases in one SELECT | seconds | µs per lease |"
echo "|---:|---:|---:|"
for n in $BULK; do
    t0=$(date +%s.%N)
    got=$(psql -X -At -v ON_ERROR_STOP=1 -c \
        "SELECT count(fencing_acquire('bulk-$n-' || g, 'bench', '1 hour')) FROM generate_series(1, $n) g")
    t1=$(date +%s.%N)
    [ "$got" = "$n" ] || { echo "bulk $n: $got leases"; exit 1; }
    awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN {printf "| %d | %.2f | %.1f |\n", n, b - a, (b - a) * 1e6 / n}'
done

# etcd: one local node on loopback, its own data dir, fsync as shipped.
if command -v etcd >/dev/null && /usr/bin/python3 -c 'import etcd3' 2>/dev/null; then
    PORT=$((FENCING_PGPORT + 100))
    etcd --name bench --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$PORT" \
        --advertise-client-urls "http://127.0.0.1:$PORT" --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
        --initial-cluster "bench=http://127.0.0.1:$((PORT + 1))" >"$WORK/etcd.log" 2>&1 &
    ETCD_PID=$!
    /usr/bin/python3 - "$PORT" "$SECONDS_PER_RUN" "$WORK/results" "$CLIENTS" <<'PY'
import sys, time, threading, etcd3
port, seconds = int(sys.argv[1]), float(sys.argv[2])
lease_rate = dict(line.split() for line in open(sys.argv[3]))
for _ in range(100):
    try:
        etcd3.client(port=port).status(); break
    except Exception:
        time.sleep(0.1)
def run(clients):
    counts = [0] * clients
    lat = []
    stop = time.time() + seconds
    def worker(i):
        c = etcd3.client(port=port)
        n = 0
        while time.time() < stop:
            t0 = time.time()
            lock = c.lock('res-%d-%d' % (i, n % 1000), ttl=10)
            lock.acquire()
            lock.release()
            lat.append(time.time() - t0)
            n += 1
        counts[i] = n
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    t = time.time(); [x.start() for x in ts]; [x.join() for x in ts]
    lat.sort()
    rate = sum(counts) / (time.time() - t)
    p = lambda q: lat[max(0, int(len(lat) * q) - 1)] * 1000
    print("| %d | %d | %.2f | %.2f | %.1fx |" % (clients, rate, p(0.5), p(0.99),
                                              float(lease_rate[str(clients)]) / rate))
print()
print("| clients | etcd cycles/s | P50 ms | P99 ms | lease/etcd |")
print("|---:|---:|---:|---:|---:|")
for c in [int(x) for x in sys.argv[4].split()]:
    run(c)
PY
else
    echo "etcd or python3-etcd3 missing: no etcd comparison"
fi
