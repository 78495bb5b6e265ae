"""Shared by the end-to-end suites (etcd.py, zookeeper.py): "ok N - ..." /
"not ok N - ..." lines, a scratch database, and the checks of the story run
against a real lock service by demo/fencing_story.py.

Connection from the libpq environment (PGHOST, PGPORT, PGUSER=postgres).
"""
import contextlib
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "demo"))

import psycopg  # noqa: E402

import fencing_story  # noqa: E402
import services  # noqa: E402,F401  (re-exported to the suites)

ITEM, NAMESPACE = fencing_story.ITEM, fencing_story.NAMESPACE


class Tap:
    def __init__(self):
        self.results = []
        self.started = time.monotonic()

    def check(self, name, expected, actual):
        ok = expected == actual
        self.results.append(ok)
        print(f"{'ok' if ok else 'not ok'} {len(self.results)} - {name}"
              + ("" if ok else f": expected {expected!r}, got {actual!r}"), flush=True)
        return ok

    def fail(self, name, why):
        return self.check(name, "ok", why)

    def finish(self):
        failed = self.results.count(False)
        print(f"# {time.monotonic() - self.started:.1f} s")
        print(f"{len(self.results) - failed} passed, {failed} failed", flush=True)
        return 1 if failed else 0


@contextlib.contextmanager
def scratch_db(suite):
    name = f"e2e_{suite}_{os.getpid()}"
    with psycopg.connect(dbname="postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        with psycopg.connect(dbname=name, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION fencing")
            yield name, conn
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def terminate_on_sigterm():
    """`timeout` sends SIGTERM: unwind, so that `with` blocks stop the servers."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def state(conn):
    stock, fence = conn.execute("SELECT stock, fence::bigint FROM inventory WHERE item = %s", (ITEM,)).fetchone()
    hwm = conn.execute("SELECT fencing_resource_high_water(%s, %s)::bigint", (ITEM, NAMESPACE)).fetchone()[0]
    return stock, fence, hwm


def advance_result(who):
    if "advance_missing" in who:
        return "fencing_resource_advance() missing: " + who["advance_missing"]["error"]
    return who.get("advanced", {}).get("ok")


def story_checks(tap, kind, endpoint, dbname, conn, token_name):
    """The pause story three times: fenced (B writes before A wakes), the race
    (A wakes between B's read and B's write), and without fencing."""
    k = f"{kind}:"
    fencing_story.setup_tables(conn)
    try:
        out = fencing_story.run_story(kind, endpoint, dbname, fenced=True, retry=False)
    except Exception as e:
        tap.fail(f"{k} the fenced story ran", f"{type(e).__name__}: {e}")
        return None
    a, b = out["A"], out["B"]
    ta, tb = a["tokens"][0], b["tokens"][0]
    tap.check(f"{k} A holds the lock with a {token_name} as its token ({ta:#x})", True, isinstance(ta, int) and ta > 0)
    tap.check(f"{k} the lock service dropped A's lock while A was paused (after {out['lease_expired_after']} s)",
              True, out["lease_expired_after"] < 15)
    tap.check(f"{k} B's token {tb:#x} is above A's {ta:#x}", True, tb > ta)
    tap.check(f"{k} B fenced its predecessor before reading: fencing_resource_advance() = true",
              True, advance_result(b))
    tap.check(f"{k} B read 10 and wrote 9 (1 row)", (10, [1]), (b["read"]["stock"], b["writes"]))
    tap.check(f"{k} A, woken by SIGCONT, writes its stale 9 through fenced_update(): 0 rows", [0], a["writes"])
    tap.check(f"{k} A's same write in transparent mode (SET LOCAL fencing.token): TF001",
              "TF001", a.get("transparent", {}).get("sqlstate"))
    tap.check(f"{k} the data reflects only B: stock 9, fence and high-water mark = B's token",
              (9, tb, tb), state(conn))
    tap.check(f"{k} both client processes exited 0", (0, 0), (a.get("exit"), b.get("exit")))

    fencing_story.setup_tables(conn)
    try:
        out = fencing_story.run_story(kind, endpoint, dbname, fenced=True, race=True, retry=True)
    except Exception as e:
        tap.fail(f"{k} the race story ran", f"{type(e).__name__}: {e}")
        return None
    a, b = out["A"], out["B"]
    tap.check(f"{k} race: B advanced before reading", True, advance_result(b))
    tap.check(f"{k} race: A wakes after B read, before B wrote: its write is refused (0 rows)",
              0, a["writes"][0])
    tap.check(f"{k} race: B then writes 9 (1 row)", [1], b["writes"])
    tap.check(f"{k} race: A re-acquires ({len(a['tokens'])} tokens), re-reads 9 and writes 8: no lost update",
              (8, a["tokens"][-1], a["tokens"][-1]), state(conn))

    fencing_story.setup_tables(conn)
    try:
        out = fencing_story.run_story(kind, endpoint, dbname, fenced=False)
    except Exception as e:
        tap.fail(f"{k} the unfenced story ran", f"{type(e).__name__}: {e}")
        return None
    lost = conn.execute("SELECT stock FROM inventory_unfenced WHERE item = %s", (ITEM,)).fetchone()[0]
    tap.check(f"{k} without fencing the same pause loses an order: two orders, stock 10 -> 9", 9, lost)
    return tb
