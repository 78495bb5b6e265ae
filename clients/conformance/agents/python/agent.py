"""The conformance agent for pgfencing (psycopg 3, the thread lease): the
line protocol of clients/conformance/PROTOCOL.md on stdin/stdout."""
import json
import os
import sys
import threading
import time

import psycopg

import pgfencing
import pgfencing.psycopg as fp

_out = threading.Lock()


def emit(msg):
    with _out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


KINDS = [(pgfencing.LeaseTakenOverError, "LeaseTakenOver"), (pgfencing.LeaseLostError, "LeaseLost"), (pgfencing.LeaseClosedError, "LeaseClosed"),
         (pgfencing.LeaseNotAcquiredError, "LeaseNotAcquired"), (pgfencing.StaleTokenError, "StaleToken"),
         (pgfencing.TokenRequiredError, "TokenRequired"),
         (pgfencing.TransactionAbortedError, "TransactionAborted"),
         (pgfencing.TransactionInProgressError, "TransactionInProgress"),
         (pgfencing.ExtensionTooOldError, "ExtensionTooOld")]


def error_of(e):
    kind = next((k for cls, k in KINDS if isinstance(e, cls)), None)
    if kind is None:
        kind = "Database" if isinstance(e, psycopg.Error) else ("Usage" if isinstance(e, RuntimeError) else "Other")
    fields = {}
    if kind == "StaleToken":
        fields = {k: (None if getattr(e, k) is None else str(getattr(e, k)))
                  for k in ("schema", "table", "key", "offered", "hwm")}
        fields["strict"] = e.strict
    return {"kind": kind, "sqlstate": getattr(e, "sqlstate", None), "message": str(e), "fields": fields}


class Agent:
    def __init__(self):
        self.leases = {}
        self.app = None
        self.reconnect({})

    def reconnect(self, _):
        if self.app is not None:
            try:
                self.app.close()
            except psycopg.Error:
                pass
        self.app = fp.connect("", autocommit=True)
        return {}

    def hello(self, _):
        return {"lang": "python", "library": f"pgfencing {pgfencing.__version__}",
                "driver": f"psycopg {psycopg.__version__}", "pid": os.getpid()}

    def acquire(self, m):
        name = m["lease"]

        def on_lost(lease):
            emit({"event": "lost", "lease": name, "reason": lease.lost_reason_kind, "at": time.time(),
                  "token": str(lease.token)})
        opts = {}
        if m.get("renew_every_ms"):
            opts["renew_every"] = m["renew_every_ms"] / 1000
        if m.get("margin_ms"):
            opts["margin"] = m["margin_ms"] / 1000
        lease = fp.Lease("", m["resource"], holder=m["holder"], ttl=m["ttl_ms"] / 1000,
                         namespace=m["namespace"], on_lost=on_lost, **opts)
        self.leases[name] = lease
        sent = time.time()
        wait = m.get("wait_ms")
        token = lease.acquire(wait=None if wait is None else wait / 1000)
        return {"token": str(token), "sent_at": sent, "returned_at": time.time()}

    def state(self, m):
        lease = self.leases[m["lease"]]
        return {"state": lease.state, "lost": lease.lost, "closed": lease.closed,
                "reason": lease.lost_reason_kind, "token": str(lease.token)}

    def write(self, m):
        lease = self.leases[m["lease"]]
        with lease.transaction(self.app) as tx:
            n = tx.execute(f"UPDATE {m['table']} SET v = %s, n = n + 1 WHERE id = %s",
                           (m["value"], m["row"])).rowcount
            if m.get("hold_ms"):
                time.sleep(m["hold_ms"] / 1000)
            if m.get("hold_server_ms"):
                tx.execute("SELECT pg_sleep(%s)", (m["hold_server_ms"] / 1000,))
        return {"rows": n}

    def fenced_update(self, m):
        key, changes = {"id": m["row"]}, {"v": m["value"]}
        if "lease" in m:
            n = self.leases[m["lease"]].fenced_update(self.app, m["table"], key, changes)
        else:
            n = fp.fenced_update(self.app, m["table"], int(m["token"]), key, changes)
        return {"rows": n}

    def release(self, m):
        return {"released": self.leases[m["lease"]].release()}

    def close(self, m):
        self.leases[m["lease"]].close()
        return {"released": None}


def main():
    agent = Agent()
    for line in sys.stdin:
        m = json.loads(line)
        cmd = m["cmd"]
        if cmd == "quit":
            emit({"id": m["id"], "ok": True})
            break
        try:
            result = getattr(agent, cmd)(m)
            emit(dict(result, id=m["id"], ok=True))
        except Exception as e:
            emit({"id": m["id"], "ok": False, "error": error_of(e)})
    for lease in agent.leases.values():
        try:
            lease.close()
        except Exception:
            pass
    os._exit(0)


if __name__ == "__main__":
    main()
