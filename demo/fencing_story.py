#!/usr/bin/python3
"""The seeds' story with real processes: two clients take a lease-bound lock
from a real lock service (etcd or ZooKeeper), one is paused with SIGSTOP past
its lease, the other takes the lock, and the paused one wakes up and writes.

This file is both
  * the client: `fencing_story.py client --lock etcd|zk ...`, one process per
    lock holder, printing one JSON event per line on stdout, and
  * the director (`run_story()`), used by `make demo` (demo/demo.py) and the
    end-to-end tests (test/e2e/), which starts the clients, pauses and wakes
    them with real signals, and reports what happened.

The database: table inventory(item, stock, fence) in resource scope, resource
column item, namespace NAMESPACE; the lock for item X is /locks/X.
"""
import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

NAMESPACE = "story"
ITEM = "SKU-001"


# ---------------------------------------------------------------- lock services

class EtcdLock:
    """The seeds' etcd lock: a lease, and a transaction that puts the lock key
    with that lease only if the key does not exist. The token is the put's
    revision. A keep-alive thread refreshes the lease every ttl/3 s, as a live
    process does; a paused process refreshes nothing and its lease expires."""

    def __init__(self, endpoint, resource, ttl, holder):
        import etcd3
        host, port = endpoint.rsplit(":", 1)
        self.client = etcd3.client(host=host, port=int(port), timeout=5)
        self.key, self.ttl, self.holder = f"/locks/{resource}", ttl, holder
        self.lease = None
        self._stop = threading.Event()

    def acquire(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lease = self.client.lease(self.ttl)
            txn = self.client.transactions
            ok, responses = self.client.transaction(
                compare=[txn.version(self.key) == 0],
                success=[txn.put(self.key, self.holder, lease=lease)],
                failure=[])
            if ok:
                self.lease = lease
                threading.Thread(target=self._keep_alive, daemon=True).start()
                return responses[0].response_put.header.revision
            lease.revoke()
            time.sleep(0.1)
        raise TimeoutError(f"lock {self.key} not acquired within {timeout} s")

    def _keep_alive(self):
        while not self._stop.wait(self.ttl / 3):
            try:
                self.lease.refresh()
            except Exception:
                pass

    def release(self):
        self._stop.set()
        if self.lease is not None:
            try:
                self.lease.revoke()
            except Exception:
                pass
            self.lease = None

    def close(self):
        self.release()
        self.client.close()


class ZkLock:
    """ZooKeeper's lock recipe (kazoo's Lock): an ephemeral sequential node
    under /locks/<resource>; the lowest node holds the lock. The token is the
    node's czxid, a zxid: epoch << 32 | counter. The session's own heartbeats
    keep the node; a paused process sends none and its session expires."""

    def __init__(self, hosts, resource, ttl, holder):
        from kazoo.client import KazooClient
        self.zk = KazooClient(hosts=hosts, timeout=float(ttl))
        self.zk.start(timeout=15)
        self.lock = self.zk.Lock(f"/locks/{resource}", holder)

    def acquire(self, timeout):
        if not self.lock.acquire(timeout=timeout):
            raise TimeoutError(f"lock {self.lock.path} not acquired within {timeout} s")
        return self.zk.exists(f"{self.lock.path}/{self.lock.node}").czxid

    def release(self):
        try:
            self.lock.release()
        except Exception:
            pass

    def close(self):
        self.release()
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:
            pass


def make_lock(kind, endpoint, resource, ttl, holder):
    return (EtcdLock if kind == "etcd" else ZkLock)(endpoint, resource, ttl, holder)


# ---------------------------------------------------------------- the client process

def emit(event, **fields):
    print(json.dumps(dict(fields, event=event)), flush=True)


def client_main(args):
    import logging
    import psycopg
    logging.basicConfig(level=logging.WARNING, format=f"  {args.name}: %(name)s: %(message)s")
    from psycopg.types.json import Jsonb

    db = psycopg.connect(dbname=args.dbname, autocommit=True)
    table = "inventory" if args.fenced else "inventory_unfenced"
    key = {"item": ITEM}
    lock = make_lock(args.lock, args.endpoint, ITEM, args.ttl, args.name)
    for attempt in range(2):            # the order, and one retry after a refusal
        token = lock.acquire(timeout=args.acquire_timeout)
        emit("acquired", token=token)
        if args.fenced:
            # Fence the predecessor before reading: after this no write with a
            # lower token can land, so what we read stays what we write over.
            try:
                advanced = db.execute("SELECT fencing_resource_advance(%s, %s, %s)",
                                      (ITEM, token, NAMESPACE)).fetchone()[0]
                emit("advanced", ok=advanced, token=token)
            except psycopg.errors.UndefinedFunction as e:
                emit("advance_missing", error=str(e).splitlines()[0])
        stock = db.execute(f"SELECT stock FROM {table} WHERE item = %s", (ITEM,)).fetchone()[0]
        emit("read", stock=stock)
        if args.wait_before_write:
            sys.stdin.readline()           # the director decides when we write
        else:
            time.sleep(args.think)         # processing the order; SIGSTOP lands here
        if args.fenced:
            rows = db.execute("SELECT fenced_update(%s, %s, %s, %s)",
                              (table, token, Jsonb(key), Jsonb({"stock": stock - 1}))).fetchone()[0]
        else:
            rows = db.execute(f"UPDATE {table} SET stock = %s WHERE item = %s", (stock - 1, ITEM)).rowcount
        emit("wrote", rows=rows, stock=stock - 1, token=token, via="fenced_update()" if args.fenced else "UPDATE")
        if rows == 0 and args.fenced:
            # The same stale write in transparent mode: unchanged SQL, the
            # token in fencing.token, refused with TF001.
            try:
                with db.transaction():
                    db.execute("SELECT set_config('fencing.token', %s, true)", (str(token),))
                    db.execute(f"UPDATE {table} SET stock = %s WHERE item = %s", (stock - 1, ITEM))
                emit("transparent", sqlstate="00000")
            except psycopg.Error as e:
                emit("transparent", sqlstate=e.sqlstate, error=e.diag.message_primary,
                     detail=e.diag.message_detail, hint=e.diag.message_hint)
        lock.release()
        emit("released")
        if rows == 1 or not args.retry:
            break
        emit("retrying")
    lock.close()
    db.close()
    emit("done")


# ---------------------------------------------------------------- the director

class Client:
    """A client process and the events it prints, read by a thread."""

    def __init__(self, name, argv):
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.events = queue.Queue()
        self.seen = []

        def pump():
            for line in self.proc.stdout:
                try:
                    ev = json.loads(line)
                except ValueError:
                    ev = {"event": "output", "line": line.rstrip()}
                self.events.put(ev)
            self.events.put({"event": "exit"})
        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, event, timeout, on_event):
        """Passes every event to on_event until `event` arrives."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"client {self.name}: no '{event}' within {timeout} s (saw {self.seen})")
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(ev["event"])
            on_event(self.name, ev)
            if ev["event"] == event:
                return ev
            if ev["event"] == "exit":
                raise RuntimeError(f"client {self.name} exited (code {self.proc.wait(5)}) before '{event}'")

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def tell(self, line="go"):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()            # SIGKILL also ends a stopped process
        self.proc.wait(10)


def setup_tables(conn):
    conn.execute("CREATE EXTENSION IF NOT EXISTS fencing")
    conn.execute("DROP TABLE IF EXISTS inventory, inventory_unfenced")
    conn.execute("CREATE TABLE inventory_unfenced (item text PRIMARY KEY, stock int NOT NULL)")
    conn.execute("INSERT INTO inventory_unfenced VALUES (%s, 10)", (ITEM,))
    conn.execute("CREATE TABLE inventory (item text PRIMARY KEY, stock int NOT NULL, fence fencing_token)")
    conn.execute("SELECT fencing_protect('inventory', scope => 'resource', resource_column => 'item',"
                 " resource_namespace => %s)", (NAMESPACE,))
    # Tokens from an earlier run in this namespace would refuse token 0.
    conn.execute("SELECT fencing_resource_reset(%s, %s)", (ITEM, NAMESPACE))
    conn.execute("INSERT INTO inventory VALUES (%s, 10, 0)", (ITEM,))


def lock_is_free(kind, endpoint):
    """Whether nobody holds /locks/ITEM, asked of the lock service itself."""
    if kind == "etcd":
        import etcd3
        host, port = endpoint.rsplit(":", 1)
        c = etcd3.client(host=host, port=int(port), timeout=5)
        try:
            return c.get(f"/locks/{ITEM}")[0] is None
        finally:
            c.close()
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=endpoint, timeout=5.0)
    zk.start(timeout=10)
    try:
        return not zk.exists(f"/locks/{ITEM}") or not zk.get_children(f"/locks/{ITEM}")
    finally:
        zk.stop()
        zk.close()


def run_story(kind, endpoint, dbname, *, fenced=True, race=False, retry=True, ttl=2,
              narrate=lambda text: None, on_event=lambda who, ev: None):
    """One run of the story. A takes the lock, reads, and is paused (SIGSTOP)
    while it processes the order; its lease expires. B takes the lock, reads
    and writes, then A is woken (SIGCONT) and writes what it computed.
    race=True wakes A after B has read and before B writes (the race that only
    fencing the predecessor before reading closes). Returns what happened."""
    me = os.path.abspath(__file__)
    common = [sys.executable, me, "client", "--lock", kind, "--endpoint", endpoint, "--dbname", dbname,
              "--ttl", str(ttl)] + (["--fenced"] if fenced else [])
    out = {"A": {}, "B": {}}

    def record(who, ev):
        out[who].setdefault(ev["event"], ev)
        if ev["event"] == "acquired":
            out[who].setdefault("tokens", []).append(ev["token"])
        if ev["event"] == "wrote":
            out[who].setdefault("writes", []).append(ev["rows"])
        on_event(who, ev)

    clients = []
    try:
        narrate("A takes the lock, reads the stock and starts processing its order.")
        a = Client("A", common + ["--name", "A", "--think", "3"] + (["--retry"] if retry else []))
        clients.append(a)
        a.wait_for("read", 30, record)
        a.signal(signal.SIGSTOP)
        out["paused_at"] = time.monotonic()
        narrate(f"SIGSTOP A (pid {a.proc.pid}): a stop-the-world pause. A renews nothing now.")
        narrate(f"Waiting for A's lease ({ttl} s) to expire ...")
        deadline = time.monotonic() + 30
        while not lock_is_free(kind, endpoint):
            if time.monotonic() > deadline:
                raise TimeoutError("A's lock was not released by the lock service within 30 s")
            time.sleep(0.2)
        out["lease_expired_after"] = round(time.monotonic() - out["paused_at"], 1)
        narrate(f"The lock service dropped A's lock after {out['lease_expired_after']} s. A is still paused.")
        narrate("B takes the lock, reads and writes." if not race else
                "B takes the lock and reads; before B writes, A wakes up.")
        b = Client("B", common + ["--name", "B"] + (["--wait-before-write"] if race else []))
        clients.append(b)
        if race:
            b.wait_for("read", 30, record)
        else:
            b.wait_for("done", 30, record)
        narrate(f"SIGCONT A (pid {a.proc.pid}): A wakes up, still believing it holds the lock, and writes.")
        a.signal(signal.SIGCONT)
        a.wait_for("wrote", 30, record)
        if race:
            a.wait_for("released", 30, record)
            narrate("Now B writes.")
            b.tell()
            b.wait_for("done", 30, record)
        a.wait_for("done", 60, record)
        for c in clients:
            c.proc.wait(10)
            out[c.name]["exit"] = c.proc.returncode
    finally:
        for c in clients:
            c.kill()
    return out


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("client")
    c.add_argument("--lock", choices=["etcd", "zk"], required=True)
    c.add_argument("--endpoint", required=True)
    c.add_argument("--dbname", required=True)
    c.add_argument("--name", required=True)
    c.add_argument("--ttl", type=int, default=2)
    c.add_argument("--think", type=float, default=0.0)
    c.add_argument("--fenced", action="store_true")
    c.add_argument("--retry", action="store_true", help="re-acquire, re-read and write again when refused")
    c.add_argument("--wait-before-write", action="store_true")
    c.add_argument("--acquire-timeout", type=float, default=20)
    args = p.parse_args()
    client_main(args)


if __name__ == "__main__":
    main()
