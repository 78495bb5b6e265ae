"""An attack pass on the Python library (pgfencing.psycopg, driver defaults)
behind a PgBouncer in transaction pooling: WORKERS processes take turns on one
lease (ttl 2 s) and write under it; the holder is stopped (SIGSTOP) past its
TTL, the server restarted fast and immediate. Counts stale writes accepted,
tokens issued twice, false losts (a lost signal in a worker never stopped and
with no restart in the 4 s before) and session state left on the server
connections. By hand (docs in test/README.md):

    attack124.py POOLED_CONNINFO DIRECT_CONNINFO DATADIR LABEL [SECONDS]
DATADIR: the cluster's data directory (pg_ctl restart as postgres). Prints a
summary line and exits 1 when a count that must be 0 is not.

ATTACK_WORKER="COMMAND ARG..." attacks another library: each worker is that
command (one process, the one stopped), given HOST PORT DBNAME USER RESOURCE
WORKER TTL_SECONDS END_EPOCH, doing what worker() below does and printing one
event a line: "token TOK EPOCH", "write TOK OLD_TOK", "lost TOK EPOCH REASON",
"error NAME EPOCH" (clients/node/test/attack_worker.js, the Java suite's
AttackWorker)."""
import multiprocessing as mp
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time

import psycopg
from psycopg.conninfo import conninfo_to_dict

import pgfencing.psycopg as fp

POOLED, DIRECT, DATADIR, LABEL = sys.argv[1:5]
SECONDS = float(sys.argv[5]) if len(sys.argv) > 5 else 40
WORKERS, TTL, RES = 4, 2.0, f"atk-{os.getpid()}"


def worker(i, events, stop):
    k = 0
    while not stop.is_set():
        k += 1
        lease = None
        try:
            lease = fp.Lease(POOLED, RES, holder=f"w{i}-{k}", ttl=TTL)
            tok = lease.acquire(wait=5)
            events.put(("token", i, tok, time.time()))
            with fp.connect(POOLED, autocommit=True) as app:
                while not stop.is_set() and not lease.lost_event.is_set():
                    with lease.transaction(app) as tx:
                        tx.execute("UPDATE atk_rows SET v = v + 1 WHERE id = 1")
                        old = tx.execute("UPDATE atk_last SET tok = %s FROM (SELECT tok FROM atk_last FOR UPDATE) o"
                                         " RETURNING o.tok", (tok,)).fetchone()[0]
                    events.put(("write", i, tok, old))
                    time.sleep(0.05)
            if lease.lost_event.is_set():
                events.put(("lost", i, tok, time.time(), lease.lost_reason_kind))
        except Exception as e:  # restarts, refusals: counted by the controller's checks
            events.put(("error", i, type(e).__name__, time.time()))
            time.sleep(0.3)
        finally:
            if lease is not None:
                try:
                    lease.close()
                except Exception:
                    pass
        if random.random() < 0.5:
            time.sleep(random.random())  # let another worker win sometimes


def external_worker(i, events, end):
    """ATTACK_WORKER's process for worker i; a thread turns its lines into events."""
    c = conninfo_to_dict(POOLED)
    p = subprocess.Popen(shlex.split(os.environ["ATTACK_WORKER"]) + [
        c["host"], str(c["port"]), c["dbname"], c.get("user", "postgres"), RES, str(i), str(TTL), str(end)],
        stdout=subprocess.PIPE, text=True)

    def read():
        for line in p.stdout:
            f = line.split()
            if f and f[0] in ("token", "write"):
                events.put((f[0], i, int(f[1]), float(f[2]) if f[0] == "token" else int(f[2])))
            elif f and f[0] == "lost":
                events.put(("lost", i, int(f[1]), float(f[2]), f[3]))
            elif f and f[0] == "error":
                events.put(("error", i, f[1], float(f[2])))
    p.reader = threading.Thread(target=read, daemon=True)
    p.reader.start()
    return p


def pg_ctl(mode):
    subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(os.environ["PGBIN"], "pg_ctl"), "-D", DATADIR,
                    "-l", os.path.join(DATADIR, "..", "server.log"), "-m", mode, "-w", "restart"],
                   check=True, stdout=subprocess.DEVNULL)


def main():
    with psycopg.connect(DIRECT, autocommit=True) as a:
        a.execute("DROP TABLE IF EXISTS atk_rows, atk_last")
        a.execute("CREATE TABLE atk_rows (id int PRIMARY KEY, res text NOT NULL, v int, fence fencing_token)")
        a.execute("SELECT fencing_protect('atk_rows', scope => 'resource', resource_column => 'res')")
        a.execute("CREATE TABLE atk_last (tok bigint)")
        a.execute("INSERT INTO atk_last VALUES (0)")
        with fp.transaction(a, 1):
            a.execute("INSERT INTO atk_rows VALUES (1, %s, 0)", (RES,))
    events, stop = mp.Queue(), mp.Event()
    end = time.time() + SECONDS
    if os.environ.get("ATTACK_WORKER"):
        procs = [external_worker(i, events, end) for i in range(WORKERS)]
    else:
        procs = [mp.Process(target=worker, args=(i, events, stop)) for i in range(WORKERS)]
        for p in procs:
            p.start()
    stopped, restarts = set(), []
    plan = ["stop", "fast", "stop", "immediate", "stop"]
    log = []
    while time.time() < end:
        time.sleep(SECONDS / (len(plan) + 2))
        if not plan:
            continue
        step = plan.pop(0)
        if step == "stop":  # the current holder, past its TTL
            with psycopg.connect(DIRECT, autocommit=True) as a:
                h = a.execute("SELECT holder FROM fencing_leases WHERE resource = %s AND live",
                              (RES,)).fetchone()
            i = int(h[0][1:].split("-")[0]) if h else random.randrange(WORKERS)
            stopped.add(i)
            os.kill(procs[i].pid, signal.SIGSTOP)
            time.sleep(TTL * 2)
            os.kill(procs[i].pid, signal.SIGCONT)
        else:
            restarts.append(time.time())
            pg_ctl(step)
            restarts.append(time.time())
    stop.set()
    for i, p in enumerate(procs):
        if isinstance(p, subprocess.Popen):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                events.put(("error", i, "did-not-end", time.time()))
            p.reader.join(10)
        else:
            p.join(30)
    time.sleep(0.5)  # the queue's feeder thread
    while not events.empty():
        log.append(events.get())
    tokens = [e[2] for e in log if e[0] == "token"]
    writes = [e for e in log if e[0] == "write"]
    stale = sum(1 for e in writes if e[3] > e[2])
    twice = len(tokens) - len(set(tokens))
    false_lost = sum(1 for e in log if e[0] == "lost" and e[1] not in stopped
                     and not any(r - 1 <= e[3] <= r + 2 * TTL for r in restarts))
    seen = set()
    with psycopg.connect(POOLED, autocommit=True, prepare_threshold=None) as c:
        for _ in range(8):
            seen.add(c.execute("SELECT current_setting('statement_timeout'),"
                               " coalesce(current_setting('fencing.token', true), ''),"
                               " (SELECT count(*) FROM pg_prepared_statements WHERE name NOT LIKE 'PGBOUNCER%%')"
                               " FROM pg_sleep(0)").fetchone())
    state = len(seen - {("0", "", 0)})
    t0 = min(restarts) if restarts else 0
    for e in log:
        if e[0] == "lost":
            print(f"# lost: worker {e[1]} token {e[2]} reason {e[4]} at {e[3] - t0:+.1f} s from the first restart"
                  f"{' (stopped)' if e[1] in stopped else ''}")
    print(f"# restarts at {[round(r - t0, 1) for r in restarts]}")
    errors = {}
    for e in log:
        if e[0] == "error":
            errors[e[2]] = errors.get(e[2], 0) + 1
    print(f"{LABEL}: acquisitions {len(tokens)}, writes {len(writes)}, SIGSTOPs {len(stopped)}, restarts "
          f"{len(restarts) // 2}; stale accepted {stale}, tokens twice {twice}, false losts {false_lost}, "
          f"server connections with session state {state} {sorted(seen)}; worker errors {errors}")
    sys.exit(1 if stale or twice or false_lost or state or len(writes) == 0 else 0)


if __name__ == "__main__":
    main()
