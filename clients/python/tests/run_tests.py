"""The pgfencing test suite, against the scratch cluster in the libpq
environment (PGHOST, PGPORT, ...). Prints "ok N - ..." / "not ok N - ..."
lines; exits 1 on any failure.

Each flavor (psycopg, psycopg-async, asyncpg) gets: acquire; heartbeat past
several TTLs; the lost signal before the TTL when renewals are blocked; a
real pause (SIGSTOP of a child holder past the TTL) that fires the lost
signal and whose late write is refused with StaleTokenError and its fields;
token carriage on an autocommit connection; fenced_*() wrappers; the max
token; the binary protocol; acquire_all() and check() when the server has
them (required when REQUIRE_LEASES_1_5=1).
"""
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

import psycopg

import pgfencing
import pgfencing.aio
import pgfencing.asyncpg as fa
import pgfencing.psycopg as fp

HERE = os.path.dirname(os.path.abspath(__file__))
MAX = pgfencing.MAX_TOKEN
TTL = 1.0
RUN = f"{os.getpid()}"
checks = int(os.environ.get("TAP_OFFSET", "0"))
failures = 0
start = checks


def report(ok, what, got=None):
    global checks, failures
    checks += 1
    failures += 0 if ok else 1
    line = f"{'ok' if ok else 'not ok'} {checks} - {what}"
    if not ok and got is not None:
        line += f"  # got {got!r}"
    print(line, flush=True)
    return ok


def crashed(what):
    """A test that raised: one failure, with the traceback as comments."""
    report(False, f"{what} (raised)")
    for line in traceback.format_exc().splitlines():
        print(f"# {line}")


def admin():
    return fp.connect("", autocommit=True)


def has_function(name):
    with admin() as c:
        return c.execute("SELECT count(*) > 0 FROM pg_catalog.pg_proc WHERE proname = %s",
                         (name,)).fetchone()[0]


def setup_table(name, conninfo=""):
    with fp.connect(conninfo, autocommit=True) as c:
        c.execute(f"DROP TABLE IF EXISTS {name}")
        c.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v text, fence fencing_token)")
        scope, require = c.execute("SELECT scope, require_token FROM fencing_protected "
                                   "WHERE table_name = %s::regclass", (name,)).fetchone()
        assert scope == "row" and require, (scope, require)
        with fp.transaction(c, 1):
            c.execute(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")


def lease_row(resource):
    with admin() as c:
        return c.execute("SELECT token::int8, live, expires_at > clock_timestamp() FROM fencing_leases "
                         "WHERE resource = %s", (resource,)).fetchone()


def row(table, id_):
    with admin() as c:
        return c.execute(f"SELECT v, fence FROM {table} WHERE id = %s", (id_,)).fetchone()


# ------------------------------------------------------------------ flavors
# The async tests run the same code over psycopg's AsyncConnection and
# asyncpg; a flavor hides their placeholder style and connection calls.

class AsyncPsycopg:
    name = "psycopg-async"

    async def connect(self):
        return await fp.async_connect("", autocommit=True)

    def lease(self, resource, **kw):
        return fp.AsyncLease("", resource, **kw)

    transaction = staticmethod(fp.async_transaction)

    async def execute(self, conn, sql, *args):
        await conn.execute(re.sub(r"\$\d+", "%s", sql), args)

    async def fetchval(self, conn, sql, *args):
        cur = await conn.execute(re.sub(r"\$\d+", "%s", sql), args)
        return (await cur.fetchone())[0]

    async def close(self, conn):
        await conn.close()

    fenced_update = staticmethod(fp.async_fenced_update)
    fenced_delete = staticmethod(fp.async_fenced_delete)
    fenced_upsert = staticmethod(fp.async_fenced_upsert)
    acquire_all = staticmethod(fp.async_acquire_all)
    check = staticmethod(fp.async_check)
    driver_error = psycopg.Error


class AsyncPg:
    name = "asyncpg"

    async def connect(self):
        return await fa.connect()

    def lease(self, resource, **kw):
        return fa.Lease(None, resource, **kw)

    transaction = staticmethod(fa.transaction)

    async def execute(self, conn, sql, *args):
        await conn.execute(sql, *args)

    async def fetchval(self, conn, sql, *args):
        return await conn.fetchval(sql, *args)

    async def close(self, conn):
        await conn.close()

    fenced_update = staticmethod(fa.fenced_update)
    fenced_delete = staticmethod(fa.fenced_delete)
    fenced_upsert = staticmethod(fa.fenced_upsert)
    acquire_all = staticmethod(fa.acquire_all)
    check = staticmethod(fa.check)

    @property
    def driver_error(self):
        import asyncpg
        return asyncpg.PostgresError


# ------------------------------------------------------------------ the pause test (all flavors)

def pause_test(flavor):
    """A child holds the lease (TTL 1.5 s); SIGSTOP past the TTL; a new
    holder acquires and writes; SIGCONT: the child's lost signal fires, its
    lease refuses locally, and its late write under the old token is refused
    by the server with StaleTokenError and the right fields."""
    table, resource, ttl = f"cp_pause_{flavor.replace('-', '_')}", f"cp-pause-{flavor}-{RUN}", 1.5
    setup_table(table)
    child = subprocess.Popen([sys.executable, os.path.join(HERE, "pause_child.py"), flavor, resource,
                              table, str(ttl)], stdout=subprocess.PIPE, text=True)
    try:
        first = json.loads(child.stdout.readline())
        token_a = first["token"]
        time.sleep(0.6)  # a renewal or two
        os.kill(child.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        with admin() as c:
            # B waits for A's lease to expire on the server, then writes.
            token_b = c.execute("SELECT fencing_acquire(%s, 'cp-holder-b', '30 s', '10 s')::int8",
                                (resource,)).fetchone()[0]
            waited = time.monotonic() - stopped
            with fp.transaction(c, token_b):
                c.execute(f"UPDATE {table} SET v = 'b' WHERE id = 1")
        time.sleep(0.3)
        os.kill(child.pid, signal.SIGCONT)
        lines = [json.loads(l) for l in child.stdout]
        child.wait(30)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
    report(token_b is not None and token_b > token_a and waited >= ttl * 0.5,
           f"{flavor}: while the holder is stopped, B acquires after its TTL "
           f"(token {token_a} -> {token_b}, waited {waited:.1f} s)", (token_b, waited))
    by = {k: l for l in lines for k in l}
    lost = by.get("lost", {})
    report(lost.get("lost") is True and lost.get("callback") == 1 and lost.get("property") is True,
           f"{flavor}: after SIGCONT the lost signal fired (event, callback once, property): "
           f"{lost.get('reason')}", lost)
    report(by.get("local", {}).get("local") == "LeaseLostError",
           f"{flavor}: lease.transaction() refuses a lost lease with LeaseLostError", by.get("local"))
    late = by.get("late", {})
    want = {"late": "StaleTokenError", "schema": "public", "table": table, "key": "Key (id)=(1)",
            "offered": token_a, "hwm": token_b, "strict": False}
    report({k: late.get(k) for k in want} == want,
           f"{flavor}: the late write is refused: {late.get('type')}(schema={late.get('schema')}, "
           f"table={late.get('table')}, key={late.get('key')!r}, offered={late.get('offered')}, "
           f"hwm={late.get('hwm')})", late)
    report(row(table, 1) == ("b", token_b), f"{flavor}: the row is B's", row(table, 1))


# ------------------------------------------------------------------ psycopg (sync, thread lease)

def sync_acquire():
    resource = f"cp-acq-psycopg-{RUN}"
    with fp.Lease("", resource, ttl=5) as a:
        token = a.acquire()
        report(isinstance(token, int) and lease_row(resource)[:2] == (token, True),
               f"psycopg: acquire returns the live lease's token {token}", lease_row(resource))
        b = fp.Lease("", resource, ttl=5)
        try:
            b.acquire()
            report(False, "psycopg: a second holder is refused without waiting")
        except pgfencing.LeaseNotAcquiredError:
            report(True, "psycopg: a second holder is refused without waiting (LeaseNotAcquiredError)")
        t0 = time.monotonic()
        try:
            b.acquire(wait=0.5)
            report(False, "psycopg: acquire(wait=0.5) gives up")
        except pgfencing.LeaseNotAcquiredError:
            took = time.monotonic() - t0
            report(0.4 <= took < 3, f"psycopg: acquire(wait=0.5) waits, then gives up ({took:.2f} s)", took)
        threading.Timer(0.3, a.release).start()
        t0 = time.monotonic()
        got = b.acquire(wait=10)
        took = time.monotonic() - t0
        report(got > token and took < 5, f"psycopg: acquire(wait=10) gets the lease {took:.2f} s after "
               f"the holder releases it at 0.3 s (token {token} -> {got})", (got, took))
        b.close()
    report(lease_row(resource)[1] is False, "psycopg: closing the lease releases it", lease_row(resource))


def sync_heartbeat():
    table, resource = "cp_hb_psycopg", f"cp-hb-psycopg-{RUN}"
    setup_table(table)
    conn = fp.connect("", autocommit=True)
    with fp.Lease("", resource, ttl=TTL) as lease:
        token = lease.acquire()
        conn.execute("BEGIN")  # a long application transaction does not hold renewals up
        conn.execute("SELECT pg_sleep(%s)", (TTL * 2,))
        conn.execute("COMMIT")
        time.sleep(TTL * 2.5)
        live = lease_row(resource)
        report(not lease.lost and lease.remaining > 0 and live[:3] == (token, True, True),
               f"psycopg: the heartbeat keeps the lease past {TTL * 4.5:.1f} s = 4.5 TTLs "
               f"(a 2-TTL application transaction meanwhile)", (lease.lost_reason, live))
        with lease.transaction(conn) as c:
            c.execute(f"UPDATE {table} SET v = 'hb' WHERE id = 1")
        report(row(table, 1) == ("hb", token), "psycopg: a write under the renewed lease lands with its token",
               row(table, 1))
    conn.close()


class RenewalBlocker:
    """Blocks a lease's renewals with a lock on its fencing.lease row (held
    by another transaction) and records, from the lost callback, how many
    seconds the server's lease still had (on a connection opened before)."""

    def __init__(self, resource):
        self.resource, self.left = resource, None
        self.called = threading.Event()
        self.locker, self.watcher = admin(), admin()

    def on_lost(self, lease):
        self.left = self.watcher.execute(
            "SELECT extract(epoch FROM expires_at - clock_timestamp())::float8 FROM fencing.lease "
            "WHERE resource = %s", (self.resource,)).fetchone()[0]
        self.called.set()

    def lock(self):
        self.locker.execute("BEGIN")
        self.locker.execute("SELECT 1 FROM fencing.lease WHERE resource = %s FOR UPDATE", (self.resource,))

    def finish(self, who, fired, lease):
        self.locker.execute("ROLLBACK")
        report(fired and self.called.is_set() and (self.left or 0) > 0,
               f"{who}: renewals blocked by a row lock: the lost signal fires before the server's TTL "
               f"ends ({self.left or 0:.2f} s before)", (fired, self.left, lease.lost_reason))
        self.locker.close()
        self.watcher.close()


def sync_blocked_renewals():
    """Renewals blocked: the lost signal must fire while the server still
    holds the lease (before its TTL runs out)."""
    blocker = RenewalBlocker(f"cp-blocked-psycopg-{RUN}")
    lease = fp.Lease("", blocker.resource, ttl=2 * TTL, margin=0.6 * TTL, on_lost=blocker.on_lost)
    lease.acquire()
    blocker.lock()
    fired = lease.lost_event.wait(TTL * 6) and blocker.called.wait(TTL * 6)
    blocker.finish("psycopg", fired, lease)
    try:
        with lease.transaction(admin()):
            pass
        report(False, "psycopg: a lost lease refuses transaction()")
    except pgfencing.LeaseLostError:
        report(True, "psycopg: a lost lease refuses transaction() with LeaseLostError")
    lease.close()


def kill_lease_connections():
    """pg_terminate_backend() of every lease connection: the count killed."""
    with admin() as c:
        return c.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                         "WHERE application_name = 'pgfencing-lease'").fetchone()[0]


def sync_reconnect():
    resource = f"cp-kill-psycopg-{RUN}"
    with fp.Lease("", resource, ttl=TTL) as lease:
        token = lease.acquire()
        killed = kill_lease_connections()
        time.sleep(TTL * 2)
        report(killed == 1 and not lease.lost and lease_row(resource)[:3] == (token, True, True),
               "psycopg: the heartbeat reconnects after its connection is killed; the lease stays live",
               (killed, lease.lost_reason, lease_row(resource)))


def sync_carriage():
    table, resource = "cp_carry_psycopg", f"cp-carry-psycopg-{RUN}"
    setup_table(table)
    conn = fp.connect("", autocommit=True)
    with fp.Lease("", resource, ttl=10) as lease:
        token = lease.acquire()
        with lease.transaction(conn) as c:
            c.execute(f"UPDATE {table} SET v = 'carried' WHERE id = 2")
        report(row(table, 2) == ("carried", token),
               f"psycopg: on an autocommit connection, transaction() carries token {token} into the row",
               row(table, 2))
        try:
            conn.execute(f"UPDATE {table} SET v = 'bare' WHERE id = 2")
            report(False, "psycopg: after it, a bare write is refused")
        except pgfencing.TokenRequiredError as e:
            report(isinstance(e, psycopg.DatabaseError) and e.sqlstate == "TF002",
                   "psycopg: the token ends with the transaction: a bare write is TokenRequiredError "
                   "(a psycopg.DatabaseError, TF002)", type(e).__mro__)
        try:
            conn.execute("SET LOCAL fencing.token = %s" % token)
            report(False, "psycopg: a hand-made SET LOCAL on autocommit is refused")
        except psycopg.Error as e:
            report(e.sqlstate == "25P01", "psycopg: a hand-made SET LOCAL on autocommit, which would be "
                   "dropped, is refused by the server (25P01)", e.sqlstate)
    conn.close()


def seen_by_server(pid):
    """What the server last received from backend pid (pg_stat_activity, read
    from another connection), and that backend's transaction state."""
    with admin() as c:
        return c.execute("SELECT query, state FROM pg_catalog.pg_stat_activity WHERE pid = %s",
                         (pid,)).fetchone()


def sync_set_local():
    """The helper sets the token with a literal SET LOCAL (what Citus forwards
    to its workers), sent without parameters and never prepared, even past
    psycopg's prepare threshold; the token ends with the transaction."""
    table = "cp_setlocal_psycopg"
    setup_table(table)
    conn = fp.connect("", autocommit=True)
    conn.prepare_threshold = 0  # would prepare every parameterless statement but one sent with prepare=False
    pid = conn.info.backend_pid
    seen = []
    for _ in range(3):
        with fp.transaction(conn, 7) as c:
            seen.append(seen_by_server(pid))
            c.execute(f"UPDATE {table} SET v = 'set-local' WHERE id = 2", prepare=False)
    report(seen == [("SET LOCAL fencing.token = '7'", "idle in transaction")] * 3,
           "psycopg: transaction() sends the token as the literal SET LOCAL fencing.token = '7'", seen)
    prepared = conn.execute("SELECT count(*) FROM pg_catalog.pg_prepared_statements "
                            "WHERE statement ~ 'fencing[.]token'", prepare=False).fetchone()[0]
    report(prepared == 0, "psycopg: the SET LOCAL is never prepared (prepare_threshold=0 on the connection)",
           prepared)
    after = conn.execute("SELECT pg_catalog.current_setting('fencing.token')", prepare=False).fetchone()[0]
    report(after == "" and row(table, 2) == ("set-local", 7),
           "psycopg: the SET LOCAL is transaction-local: the row carries 7, the connection keeps no token",
           (after, row(table, 2)))
    try:
        with fp.transaction(conn, "7; RESET fencing.token"):
            pass
        report(False, "psycopg: transaction() refuses a token that is not an int")
    except TypeError:
        report(seen_by_server(pid)[0].startswith("SELECT pg_catalog.current_setting"),
               "psycopg: transaction() refuses a token that is not an int (TypeError) before anything "
               "is sent", seen_by_server(pid))
    conn.close()


def sync_swallowed():
    """A statement that fails inside transaction() while the block goes on
    (its error caught) aborts the transaction; the server answers the COMMIT
    with ROLLBACK and no error, so the helper must not report success."""
    table = "cp_swallow_psycopg"
    setup_table(table)
    for autocommit in (True, False):
        conn = fp.connect("", autocommit=autocommit)
        try:
            with fp.transaction(conn, 5):
                conn.execute(f"UPDATE {table} SET v = 'lost' WHERE id = 2")
                try:
                    conn.execute("SELECT 1/0")
                except psycopg.Error:
                    pass
            report(False, f"psycopg (autocommit={autocommit}): a caught error inside transaction() "
                   "is not reported as a commit", row(table, 2))
        except pgfencing.TransactionAbortedError:
            report(row(table, 2) == ("b", 1), f"psycopg (autocommit={autocommit}): a caught error "
                   "inside transaction() raises TransactionAbortedError, nothing committed", row(table, 2))
        conn.close()


def sync_fenced():
    table, resource = "cp_fdml_psycopg", f"cp-fdml-psycopg-{RUN}"
    setup_table(table)
    conn = fp.connect("", autocommit=True)
    with fp.Lease("", resource, ttl=10) as lease:
        token = lease.acquire()
        report(lease.fenced_upsert(conn, table, {"id": 3, "v": "up"}) == 1 and row(table, 3) == ("up", token),
               "psycopg: fenced_upsert() inserts under the lease's token", row(table, 3))
        report(lease.fenced_update(conn, table, {"id": 3}, {"v": "upd"}) == 1,
               "psycopg: fenced_update() writes 1 row")
        report(lease.fenced_update(conn, table, {"id": 99}, {"v": "x"}) == 0,
               "psycopg: fenced_update() of a missing row returns 0 (not stale)")
        fp.fenced_update(conn, table, token + 5, {"id": 3}, {"v": "newer"})
        try:
            lease.fenced_update(conn, table, {"id": 3}, {"v": "stale"})
            report(False, "psycopg: a stale fenced_update() raises")
        except pgfencing.StaleTokenError as e:
            report((e.offered, e.hwm, e.table, e.schema) == (token, token + 5, table, "public"),
                   f"psycopg: a stale fenced_update() raises StaleTokenError(offered={e.offered}, hwm={e.hwm})",
                   (e.offered, e.hwm, e.table, e.schema))
        report(fp.fenced_delete(conn, table, token + 5, {"id": 3}) == 1, "psycopg: fenced_delete() writes 1 row")
    conn.close()


def sync_max_and_binary():
    table, resource = "cp_max_psycopg", f"cp-max-psycopg-{RUN}"
    setup_table(table)
    conn = fp.connect("", autocommit=True)
    conn.execute("SELECT fencing_resource_advance(%s, %s)", (resource, MAX - 1))
    with fp.Lease("", resource, ttl=10) as lease:
        token = lease.acquire()
        report(token == MAX and type(token) is int, f"psycopg: acquire hands out the max token {token}", token)
        with lease.transaction(conn) as c:
            c.execute(f"UPDATE {table} SET v = 'max' WHERE id = 1")
        text = conn.execute(f"SELECT fence, ARRAY[fence] FROM {table} WHERE id = 1").fetchone()
        binary = conn.cursor(binary=True).execute(f"SELECT fence, ARRAY[fence], %s::fencing_token, %s "
                                                  f"FROM {table} WHERE id = 1",
                                                  (fp.Token(MAX), fp.Token(MAX))).fetchone()
        report(text == (MAX, [MAX]), "psycopg: the max token reads back exactly (text)", text)
        report(binary == (MAX, [MAX], MAX, MAX) and all(type(x) is int for x in (binary[0], binary[2])),
               "psycopg: binary cursor: token, token[], a Token parameter sent as binary fencing_token", binary)
        try:
            with fp.transaction(conn, MAX - 1):
                conn.execute(f"UPDATE {table} SET v = 'stale' WHERE id = 1")
            report(False, "psycopg: MAX - 1 is stale")
        except pgfencing.StaleTokenError as e:
            report((e.offered, e.hwm) == (MAX - 1, MAX), "psycopg: MAX - 1 refused, hwm read as MAX exactly",
                   (e.offered, e.hwm))
    conn.close()


def sync_leases_1_5(required):
    if not has_function("fencing_acquire_all"):
        if required:
            report(False, "psycopg: fencing_acquire_all/fencing_check exist on the server")
        else:
            print("# psycopg: fencing_acquire_all/fencing_check not on this server: not tested")
        return
    conn = fp.connect("", autocommit=True)
    res = [f"cp-all-{RUN}-{i}" for i in range(3)]
    tokens = fp.acquire_all(conn, res, "cp-all-a", 10)
    report(tokens is not None and len(tokens) == 3 and all(type(t) is int for t in tokens),
           f"psycopg: acquire_all() of 3 resources: {tokens}", tokens)
    report(fp.acquire_all(conn, [f"cp-all-{RUN}-x", res[1]], "cp-all-b", 10) is None,
           "psycopg: acquire_all() when one is held returns None")
    report(lease_row(f"cp-all-{RUN}-x") is None or lease_row(f"cp-all-{RUN}-x")[1] is False,
           "psycopg: ... and holds none of them", lease_row(f"cp-all-{RUN}-x"))
    live = fp.check(conn, res[0], tokens[0])
    conn.execute("SELECT fencing_resource_advance(%s, %s)", (res[0], tokens[0] + 1))
    fenced = fp.check(conn, res[0], tokens[0])
    report((live, fenced) == (True, False),
           "psycopg: check() is true for the live token, false once a higher one is accepted", (live, fenced))
    with fp.Lease("", f"cp-re-{RUN}", holder="cp-re", ttl=10) as a:
        t1 = a.acquire()
        again = fp.Lease("", f"cp-re-{RUN}", holder="cp-re", ttl=10)
        t2 = again.acquire()
        report(t1 == t2, f"psycopg: re-acquire by the same holder returns its live token ({t1}, {t2})", (t1, t2))
        report(a.check() is True, "psycopg: lease.check()")
        # Not released (it holds a's token): stopped, and its connection closed here, else
        # it stays open until collected (psycopg 3.2 keeps it) and a later test that
        # terminates every lease connection counts it.
        again._stop.set()
        if again._conn is not None:
            again._conn.close()
    conn.close()


# ------------------------------------------------------------------ asyncio flavors

async def async_acquire(f):
    resource = f"cp-acq-{f.name}-{RUN}"
    async with f.lease(resource, ttl=5) as a:
        token = await a.acquire()
        report(isinstance(token, int) and lease_row(resource)[:2] == (token, True),
               f"{f.name}: acquire returns the live lease's token {token}", lease_row(resource))
        b = f.lease(resource, ttl=5)
        try:
            await b.acquire()
            report(False, f"{f.name}: a second holder is refused")
        except pgfencing.LeaseNotAcquiredError:
            report(True, f"{f.name}: a second holder is refused without waiting (LeaseNotAcquiredError)")
        t0 = time.monotonic()
        try:
            await b.acquire(wait=0.5)
            report(False, f"{f.name}: acquire(wait=0.5) gives up")
        except pgfencing.LeaseNotAcquiredError:
            took = time.monotonic() - t0
            report(0.4 <= took < 3, f"{f.name}: acquire(wait=0.5) waits, then gives up ({took:.2f} s)", took)
        async def release_soon():
            await asyncio.sleep(0.3)
            await a.release()
        releasing = asyncio.create_task(release_soon())
        t0 = time.monotonic()
        got = await b.acquire(wait=10)
        took = time.monotonic() - t0
        await releasing
        report(got > token and took < 5, f"{f.name}: acquire(wait=10) gets the lease {took:.2f} s after "
               f"the holder releases it at 0.3 s (token {token} -> {got})", (got, took))
        await b.close()
    report(lease_row(resource)[1] is False, f"{f.name}: closing the lease releases it", lease_row(resource))


async def async_heartbeat(f):
    table, resource = f"cp_hb_{f.name.replace('-', '_')}", f"cp-hb-{f.name}-{RUN}"
    setup_table(table)
    conn = await f.connect()
    async with f.lease(resource, ttl=TTL) as lease:
        token = await lease.acquire()
        async with conn.transaction():  # a long application transaction
            await f.execute(conn, "SELECT pg_sleep(2.0)")
        await asyncio.sleep(TTL * 2.5)
        live = lease_row(resource)
        report(not lease.lost and live[:3] == (token, True, True),
               f"{f.name}: the heartbeat keeps the lease past 4.5 TTLs (a 2-TTL transaction meanwhile)",
               (lease.lost_reason, live))
        async with lease.transaction(conn):
            await f.execute(conn, f"UPDATE {table} SET v = 'hb' WHERE id = 1")
        report(row(table, 1) == ("hb", token), f"{f.name}: a write under the renewed lease lands with its token",
               row(table, 1))
    await f.close(conn)


async def async_blocked_renewals(f):
    blocker = RenewalBlocker(f"cp-blocked-{f.name}-{RUN}")
    lease = f.lease(blocker.resource, ttl=2 * TTL, margin=0.6 * TTL, on_lost=blocker.on_lost)
    await lease.acquire()
    blocker.lock()
    try:
        await asyncio.wait_for(lease.lost_event.wait(), TTL * 6)
        fired = True
    except asyncio.TimeoutError:
        fired = False
    blocker.finish(f.name, fired, lease)
    conn = await f.connect()
    try:
        await lease.fenced_update(conn, "cp_hb_x", {"id": 1}, {"v": 1})
        report(False, f"{f.name}: a lost lease refuses fenced_update()")
    except pgfencing.LeaseLostError:
        report(True, f"{f.name}: a lost lease refuses fenced_update() with LeaseLostError")
    await f.close(conn)
    await lease.close()


async def async_reconnect(f):
    resource = f"cp-kill-{f.name}-{RUN}"
    async with f.lease(resource, ttl=TTL) as lease:
        token = await lease.acquire()
        # In a thread: a blocking admin query on the event loop would hold
        # the lease's renewals up (a test artefact, not the library's).
        killed = await asyncio.to_thread(kill_lease_connections)
        await asyncio.sleep(TTL * 2)
        report(killed == 1 and not lease.lost and lease_row(resource)[:3] == (token, True, True),
               f"{f.name}: the heartbeat reconnects after its connection is killed; the lease stays live",
               (killed, lease.lost_reason, lease_row(resource)))


async def async_carriage(f):
    table, resource = f"cp_carry_{f.name.replace('-', '_')}", f"cp-carry-{f.name}-{RUN}"
    setup_table(table)
    conn = await f.connect()
    async with f.lease(resource, ttl=10) as lease:
        token = await lease.acquire()
        async with lease.transaction(conn):
            await f.execute(conn, f"UPDATE {table} SET v = 'carried' WHERE id = 2")
        report(row(table, 2) == ("carried", token),
               f"{f.name}: on an autocommit connection, transaction() carries token {token} into the row",
               row(table, 2))
        try:
            await f.execute(conn, f"UPDATE {table} SET v = 'bare' WHERE id = 2")
            report(False, f"{f.name}: after it, a bare write is refused")
        except pgfencing.TokenRequiredError as e:
            report(isinstance(e, f.driver_error), f"{f.name}: the token ends with the transaction: a bare "
                   f"write is TokenRequiredError (a {f.driver_error.__name__})", type(e).__mro__)
        try:
            async with f.transaction(conn, token - 1 if token > 1 else 0):
                await f.execute(conn, f"UPDATE {table} SET v = 'older' WHERE id = 2")
            report(False, f"{f.name}: an older token is refused")
        except pgfencing.StaleTokenError as e:
            fatal = type(e).__mro__
            import asyncpg
            report(isinstance(e, f.driver_error) and not isinstance(e, asyncpg.exceptions.FatalPostgresError)
                   and await f.fetchval(conn, "SELECT 1") == 1,
                   f"{f.name}: TF001 is StaleTokenError, a {f.driver_error.__name__}, not a fatal class; "
                   f"the connection stays usable", fatal)
    await f.close(conn)


async def async_set_local(f):
    """As sync_set_local, over the async flavor's driver."""
    table = f"cp_setlocal_{f.name.replace('-', '_')}"
    setup_table(table)
    conn = await f.connect()
    pid = await f.fetchval(conn, "SELECT pg_catalog.pg_backend_pid()")
    seen = []
    for _ in range(3):
        async with f.transaction(conn, 7):
            seen.append(seen_by_server(pid))
            await f.execute(conn, f"UPDATE {table} SET v = 'set-local' WHERE id = 2")
    report(seen == [("SET LOCAL fencing.token = '7'", "idle in transaction")] * 3,
           f"{f.name}: transaction() sends the token as the literal SET LOCAL fencing.token = '7'", seen)
    after = await f.fetchval(conn, "SELECT pg_catalog.current_setting('fencing.token')")
    report(after == "" and row(table, 2) == ("set-local", 7),
           f"{f.name}: the SET LOCAL is transaction-local: the row carries 7, the connection keeps no token",
           (after, row(table, 2)))
    await f.close(conn)


async def async_swallowed(f):
    table = f"cp_swallow_{f.name.replace('-', '_')}"
    setup_table(table)
    conn = await f.connect()
    try:
        async with f.transaction(conn, 5):
            await f.execute(conn, f"UPDATE {table} SET v = 'lost' WHERE id = 2")
            try:
                await f.execute(conn, "SELECT 1/0")
            except f.driver_error:
                pass
        report(False, f"{f.name}: a caught error inside transaction() is not reported as a commit",
               row(table, 2))
    except pgfencing.TransactionAbortedError:
        report(row(table, 2) == ("b", 1) and await f.fetchval(conn, "SELECT 1") == 1,
               f"{f.name}: a caught error inside transaction() raises TransactionAbortedError, nothing "
               f"committed, the connection usable", row(table, 2))
    await f.close(conn)


async def async_fenced(f):
    table, resource = f"cp_fdml_{f.name.replace('-', '_')}", f"cp-fdml-{f.name}-{RUN}"
    setup_table(table)
    conn = await f.connect()
    async with f.lease(resource, ttl=10) as lease:
        token = await lease.acquire()
        n = await lease.fenced_upsert(conn, table, {"id": 3, "v": "up"})
        report(n == 1 and row(table, 3) == ("up", token), f"{f.name}: fenced_upsert() inserts under the token",
               (n, row(table, 3)))
        report(await lease.fenced_update(conn, table, {"id": 3}, {"v": "upd"}) == 1,
               f"{f.name}: fenced_update() writes 1 row")
        report(await lease.fenced_update(conn, table, {"id": 99}, {"v": "x"}) == 0,
               f"{f.name}: fenced_update() of a missing row returns 0 (not stale)")
        await f.fenced_update(conn, table, token + 5, {"id": 3}, {"v": "newer"})
        try:
            await lease.fenced_update(conn, table, {"id": 3}, {"v": "stale"})
            report(False, f"{f.name}: a stale fenced_update() raises")
        except pgfencing.StaleTokenError as e:
            report((e.offered, e.hwm, e.table) == (token, token + 5, table),
                   f"{f.name}: a stale fenced_update() raises StaleTokenError(offered={e.offered}, hwm={e.hwm})",
                   (e.offered, e.hwm, e.table))
        report(await f.fenced_delete(conn, table, token + 5, {"id": 3}) == 1,
               f"{f.name}: fenced_delete() writes 1 row")
    await f.close(conn)


async def async_max_and_binary(f):
    table, resource = f"cp_max_{f.name.replace('-', '_')}", f"cp-max-{f.name}-{RUN}"
    setup_table(table)
    conn = await f.connect()
    await f.fetchval(conn, "SELECT fencing_resource_advance($1, $2::int8)", resource, MAX - 1)
    async with f.lease(resource, ttl=10) as lease:
        token = await lease.acquire()
        report(token == MAX and type(token) is int, f"{f.name}: acquire hands out the max token {token}", token)
        async with lease.transaction(conn):
            await f.execute(conn, f"UPDATE {table} SET v = 'max' WHERE id = 1")
        got = await f.fetchval(conn, f"SELECT fence FROM {table} WHERE id = 1")
        report(got == MAX and type(got) is int, f"{f.name}: the max token reads back exactly as int", got)
    if f.name == "asyncpg":
        import asyncpg
        async with fa.create_pool(min_size=1, max_size=2) as pool:
            got = await pool.fetchval("SELECT $1::fencing_token", MAX)
        report(got == MAX, "asyncpg: create_pool() registers the codecs on its connections", got)
        raw = await asyncpg.connect()
        try:
            await raw.fetchval("SELECT $1::fencing_token", 34)
            report(False, "asyncpg: unregistered, an int token parameter fails")
        except asyncpg.DataError as e:
            report("expected str, got int" in str(e),
                   "asyncpg: unregistered connection: an int parameter fails (expected str, got int)", str(e))
        await raw.close()
        got = await conn.fetchrow("SELECT $1::fencing_token AS t, $2::fencing_token[] AS a", MAX, [1, MAX])
        report((got["t"], got["a"]) == (MAX, [1, MAX]),
               "asyncpg: registered (binary int8 codec): int parameters, token and token[] results exact", got)
        try:
            await conn.fetchval("SELECT $1::fencing_token", -1)
            report(False, "asyncpg: a negative token is refused")
        except asyncpg.PostgresError as e:
            report(e.sqlstate == "22003", "asyncpg: a negative binary token is refused by the server (22003)",
                   e.sqlstate)
    else:
        async with conn.cursor(binary=True) as cur:
            await cur.execute(f"SELECT fence, ARRAY[fence], %s::fencing_token FROM {table} WHERE id = 1",
                              (fp.Token(MAX),))
            got = await cur.fetchone()
        report(got == (MAX, [MAX], MAX), f"{f.name}: binary cursor: token, token[], Token parameter exact", got)
    await f.close(conn)


async def async_leases_1_5(f, required):
    if not has_function("fencing_acquire_all"):
        if required:
            report(False, f"{f.name}: fencing_acquire_all/fencing_check exist on the server")
        return
    conn = await f.connect()
    res = [f"cp-all-{f.name}-{RUN}-{i}" for i in range(3)]
    tokens = await f.acquire_all(conn, res, "a", 10)
    report(tokens is not None and len(tokens) == 3, f"{f.name}: acquire_all() of 3 resources: {tokens}", tokens)
    report(await f.acquire_all(conn, [res[2], f"cp-all-{f.name}-{RUN}-y"], "b", 10) is None,
           f"{f.name}: acquire_all() when one is held returns None")
    live = await f.check(conn, res[1], tokens[1])
    await f.fetchval(conn, "SELECT fencing_resource_advance($1, $2::int8)", res[1], tokens[1] + 1)
    fenced = await f.check(conn, res[1], tokens[1])
    report((live, fenced) == (True, False),
           f"{f.name}: check() is true for the live token, false once a higher one is accepted", (live, fenced))
    await f.close(conn)


async def async_suite(f, required):
    for test in (async_acquire, async_heartbeat, async_reconnect, async_blocked_renewals, async_carriage,
                 async_set_local, async_swallowed, async_fenced,
                 async_max_and_binary):
        try:
            await test(f)
        except Exception:
            crashed(f"{f.name}: {test.__name__}")
    try:
        await async_leases_1_5(f, required)
    except Exception:
        crashed(f"{f.name}: leases 1.5")


def old_sql_tests():
    """The library on a database whose extension SQL is still 1.4 (new
    files installed, ALTER EXTENSION UPDATE not run yet): the old paths work,
    the 1.5 calls fail with ExtensionTooOldError."""
    db = f"cp_old_{RUN}"
    with admin() as c:
        c.execute(f"CREATE DATABASE {db}")
    conninfo = f"dbname={db}"
    try:
        with psycopg.connect(conninfo, autocommit=True) as c:
            c.execute("CREATE EXTENSION fencing VERSION '1.4'")
        setup_table("cp_old", conninfo)
        conn = fp.connect(conninfo, autocommit=True)
        with fp.Lease(conninfo, f"cp-old-{RUN}", ttl=10) as lease:
            token = lease.acquire()
            ok = lease.fenced_update(conn, "cp_old", {"id": 1}, {"v": "x"}) == 1
            missing = lease.fenced_update(conn, "cp_old", {"id": 99}, {"v": "x"})
            fp.fenced_update(conn, "cp_old", token + 5, {"id": 1}, {"v": "newer"})
            try:
                lease.fenced_update(conn, "cp_old", {"id": 1}, {"v": "stale"})
                stale = None
            except pgfencing.StaleTokenError as e:
                stale = (e.offered, e.hwm, e.schema, e.table)
            report(ok and missing == 0 and stale == (token, token + 5, "public", "cp_old"),
                   "SQL 1.4: fenced_update() tells stale (StaleTokenError from the HWM read after a 0) "
                   "from missing (0)", (ok, missing, stale))
            for call in (lambda: fp.acquire_all(conn, ["a", "b"], "h", 5), lambda: lease.check()):
                try:
                    call()
                    report(False, "SQL 1.4: a 1.5 call is refused")
                except pgfencing.ExtensionTooOldError as e:
                    report("ALTER EXTENSION fencing UPDATE" in str(e),
                           f"SQL 1.4: psycopg: {str(e).split(':')[0]} -> ExtensionTooOldError", str(e))
        conn.close()

        async def with_asyncpg():
            a = await fa.connect(database=db)
            try:
                await fa.fenced_update(a, "cp_old", MAX, {"id": 2}, {"v": "top"})
                try:
                    await fa.fenced_update(a, "cp_old", MAX - 1, {"id": 2}, {"v": "stale"})
                    report(False, "SQL 1.4: asyncpg: a stale fenced_update() raises")
                except pgfencing.StaleTokenError as e:
                    report((e.offered, e.hwm) == (MAX - 1, MAX),
                           "SQL 1.4: asyncpg: stale fenced_update() raises StaleTokenError, HWM exact at MAX",
                           (e.offered, e.hwm))
                try:
                    await fa.check(a, "r", 1)
                    report(False, "SQL 1.4: asyncpg: check() is refused")
                except pgfencing.ExtensionTooOldError:
                    report(True, "SQL 1.4: asyncpg: check() -> ExtensionTooOldError")
            finally:
                await a.close()
        asyncio.run(with_asyncpg())
    finally:
        with admin() as c:
            c.execute(f"DROP DATABASE {db} WITH (FORCE)")


def orm_tests():
    """psycopg2 under SQLAlchemy (Debian's 1.4): the lease from pgfencing
    (its own psycopg 3 connection), the token carried by a Session
    transaction, the refusal made typed by pgfencing.typed_errors()."""
    import psycopg2
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session
    table, resource = "cp_orm", f"cp-orm-{RUN}"
    setup_table(table)
    engine = create_engine("postgresql+psycopg2://", future=True)
    with fp.Lease("", resource, ttl=10) as lease:
        token = lease.acquire()
        with Session(engine) as s, s.begin():
            s.execute(text("SELECT set_config('fencing.token', :t, true)"), {"t": str(token)})
            s.execute(text(f"UPDATE {table} SET v = 'orm' WHERE id = 1"))
        report(row(table, 1) == ("orm", token), "SQLAlchemy + psycopg2: a Session transaction carries the "
               "lease's token", row(table, 1))
        try:
            with pgfencing.typed_errors(), Session(engine) as s, s.begin():
                s.execute(text("SELECT set_config('fencing.token', :t, true)"), {"t": str(token - 1 or 0)})
                s.execute(text(f"UPDATE {table} SET v = 'stale' WHERE id = 1"))
            report(False, "SQLAlchemy + psycopg2: a stale write raises")
        except pgfencing.StaleTokenError as e:
            report((e.schema, e.table, e.key, e.offered, e.hwm) == ("public", table, "Key (id)=(1)",
                                                                   token - 1 or 0, token)
                   and isinstance(e.__cause__.orig, psycopg2.Error),
                   f"SQLAlchemy + psycopg2: typed_errors() turns TF001 into StaleTokenError"
                   f"(key={e.key!r}, offered={e.offered}, hwm={e.hwm}) from the driver's fields",
                   (e.schema, e.table, e.key, e.offered, e.hwm))
        try:
            with pgfencing.typed_errors(), Session(engine) as s, s.begin():
                s.execute(text(f"UPDATE {table} SET v = 'bare' WHERE id = 1"))
            report(False, "SQLAlchemy + psycopg2: a bare write raises")
        except pgfencing.TokenRequiredError:
            report(True, "SQLAlchemy + psycopg2: a bare write -> TokenRequiredError")
    engine.dispose()


def main():
    required = os.environ.get("REQUIRE_LEASES_1_5") == "1"
    report(pgfencing.parse_stale_detail(
        "Key (k)=(: offered token 1 is below the high-water mark 2.): offered token 3 is not above "
        "the high-water mark 4 (strict: a token is admitted to one transaction only).")
        == ("Key (k)=(: offered token 1 is below the high-water mark 2.)", 3, 4, True),
        "DETAIL parser: the fixed tail at the end wins over a key that imitates it")
    for test in (sync_acquire, sync_heartbeat, sync_reconnect, sync_blocked_renewals, sync_carriage,
                 sync_set_local, sync_swallowed,
                 sync_fenced,
                 sync_max_and_binary):
        try:
            test()
        except Exception:
            crashed(f"psycopg: {test.__name__}")
    try:
        sync_leases_1_5(required)
    except Exception:
        crashed("psycopg: leases 1.5")
    for flavor in (AsyncPsycopg(), AsyncPg()):
        asyncio.run(async_suite(flavor, required))
    try:
        orm_tests()
    except Exception:
        crashed("ORM tests")
    try:
        old_sql_tests()
    except Exception:
        crashed("SQL 1.4 tests")
    for name in ("psycopg", "psycopg-async", "asyncpg"):
        try:
            pause_test(name)
        except Exception:
            crashed(f"{name}: pause test")
    import contract_tests
    contract_tests.run_all(sys.modules[__name__], RUN)
    import takeover_tests
    takeover_tests.run_all(sys.modules[__name__], RUN)
    print(f"# {checks - start - failures} of {checks - start} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
