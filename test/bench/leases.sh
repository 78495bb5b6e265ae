#!/usr/bin/env bash
# Lease throughput: fencing_acquire + fencing_release cycles per second from 1,
# 4 and 8 clients (pgbench, each call its own durably committed transaction:
# synchronous_commit = on, fsync = on), with P50/P99 cycle latency from
# pgbench's per-transaction log; and, in the same run, a local single-node etcd
# lock acquire+release loop through python3-etcd3 for comparison.
#
#   bash test/bench/leases.sh      (SECONDS_PER_RUN=10; COMMIT_DELAY/COMMIT_SIBLINGS to tune)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
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
cat >"$WORK/cycle.sql" <<'SQL'
SELECT fencing_acquire('res-' || :client_id, 'bench', '10 seconds') AS tok \gset
SELECT fencing_release('res-' || :client_id, :tok);
SQL
chmod -R a+rX "$WORK"
percentile() {  # percentile P FILE...: latency (ms) at percentile P of pgbench logs
    cat "${@:2}" | awk '{print $3}' | sort -n |
        awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100); if (i<1) i=1; printf "%.2f", a[i]/1000}'
}
echo "| clients | cycles/s | P50 ms | P99 ms |"
echo "|---:|---:|---:|---:|"
for c in 1 4 8; do
    rm -f "$WORK"/pgbench_log.*
    tps=$(cd "$WORK" && pgbench -n -c "$c" -j "$c" -T "$SECONDS_PER_RUN" -l -f cycle.sql 2>"$WORK/pgbench.err" |
        sed -n 's/^tps = \([0-9.]*\) .*/\1/p' || true)
    [ -n "$tps" ] || { cat "$WORK/pgbench.err"; exit 1; }
    echo "| $c | ${tps%.*} | $(percentile 50 "$WORK"/pgbench_log.*) | $(percentile 99 "$WORK"/pgbench_log.*) |"
    echo "pg $c $tps" >>"$WORK/results"
done

# etcd: one local node on loopback, its own data dir, fsync as shipped.
if command -v etcd >/dev/null && /usr/bin/python3 -c 'import etcd3' 2>/dev/null; then
    PORT=$((FENCING_PGPORT + 100))
    etcd --name bench --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$PORT" \
        --advertise-client-urls "http://127.0.0.1:$PORT" --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
        --initial-cluster "bench=http://127.0.0.1:$((PORT + 1))" >"$WORK/etcd.log" 2>&1 &
    ETCD_PID=$!
    /usr/bin/python3 - "$PORT" "$SECONDS_PER_RUN" <<'PY'
import sys, time, threading, etcd3
port, seconds = int(sys.argv[1]), float(sys.argv[2])
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
    print("| etcd %d | %d | %.2f | %.2f |" % (clients, rate, p(0.5), p(0.99)))
for c in (1, 4, 8):
    run(c)
PY
else
    echo "etcd or python3-etcd3 missing: no etcd comparison"
fi
