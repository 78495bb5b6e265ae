"""The contract's findings for pgfencing (clients/CONTRACT.md), each a test
that failed on the 1.5 library. Called by run_tests.py with its helpers."""
import asyncio
import inspect
import threading
import time

import psycopg

import pgfencing
import pgfencing.asyncpg as fa
import pgfencing.psycopg as fp


def run_all(h, run):
    """h: run_tests' helpers (report, crashed, admin, lease_row, setup_table, row)."""
    tests = [waited_acquire_sync, release_is_not_lost, with_acquires, classes, pool_configure,
             multi_resource, no_prepared_statements, callers_transaction, release_lost_lease]
    for test in tests:
        try:
            test(h, run)
        except Exception:
            h.crashed(f"contract: {test.__name__}")
    for flavor, make in (("psycopg-async", lambda r, **kw: fp.AsyncLease("", r, **kw)),
                         ("asyncpg", lambda r, **kw: fa.Lease(None, r, **kw))):
        try:
            asyncio.run(waited_acquire_async(h, run, flavor, make))
        except Exception:
            h.crashed(f"contract: {flavor} waited acquire")


def waited_acquire_sync(h, run):
    """A lease that waited most of its TTL for its predecessor is not
    declared lost: the server granted it a full TTL after the wait."""
    resource, ttl = f"ct-wait-psycopg-{run}", 3.0
    a = fp.Lease("", resource, ttl=ttl)
    a.acquire()
    threading.Timer(2.5, a.close).start()
    lost_at = []
    b = fp.Lease("", resource, ttl=ttl, on_lost=lambda lease: lost_at.append(time.monotonic()))
    t0 = time.monotonic()
    b.acquire(wait=10)
    waited = time.monotonic() - t0
    time.sleep(2.5)
    live = h.lease_row(resource)
    h.report(waited >= 2.3 and not lost_at and not b.lost and live[:2] == (b.token, True),
             f"psycopg: a lease that waited {waited:.2f} s of its {ttl:.0f} s TTL is not declared lost "
             f"while the server renews it", (waited, b.lost_reason, live))
    b.close()


async def waited_acquire_async(h, run, flavor, make):
    resource, ttl = f"ct-wait-{flavor}-{run}", 3.0
    a = make(resource, ttl=ttl)
    await a.acquire()

    async def release_later():
        await asyncio.sleep(2.5)
        await a.close()
    task = asyncio.create_task(release_later())
    b = make(resource, ttl=ttl)
    t0 = time.monotonic()
    await b.acquire(wait=10)
    waited = time.monotonic() - t0
    await asyncio.sleep(2.5)
    live = h.lease_row(resource)
    h.report(waited >= 2.3 and not b.lost and live[:2] == (b.token, True),
             f"{flavor}: a lease that waited {waited:.2f} s of its {ttl:.0f} s TTL is not declared lost",
             (waited, b.lost_reason, live))
    await b.close()
    await task


def release_is_not_lost(h, run):
    resource = f"ct-closed-{run}"
    fired = []
    lease = fp.Lease("", resource, ttl=5, on_lost=lambda lease: fired.append(1))
    lease.acquire()
    released = lease.release()
    time.sleep(0.05)
    h.report(released and not fired and not lease.lost and not lease.lost_event.is_set()
             and lease.closed and lease.state == "closed",
             "psycopg: release() closes the lease without the lost signal (state closed, lost False)",
             (released, fired, lease.lost, lease.state))
    conn = fp.connect("", autocommit=True)
    try:
        with lease.transaction(conn):
            pass
        err = None
    except Exception as e:  # noqa: BLE001 - the type is the check
        err = e
    conn.close()
    h.report(isinstance(err, pgfencing.LeaseClosedError) and not isinstance(err, pgfencing.LeaseLostError),
             "psycopg: a transaction under a released lease: LeaseClosedError, not LeaseLostError", repr(err))
    h.report(lease.release() is False, "psycopg: a second release() returns False without raising")


def with_acquires(h, run):
    resource = f"ct-with-{run}"
    with fp.Lease("", resource, ttl=5, wait=1) as lease:
        held = lease.state == "held" and lease.token is not None and h.lease_row(resource)[:2] == (lease.token, True)
    h.report(held and h.lease_row(resource)[1] is False,
             "psycopg: `with Lease(...) as lease:` acquires (as etcd3, kazoo, redis-py locks do) and releases",
             h.lease_row(resource))


def classes(h, run):
    ok = all(inspect.isclass(c) for c in (fp.Lease, fp.AsyncLease, fa.Lease))
    ok = ok and issubclass(fp.AsyncLease, pgfencing.aio.AsyncLease) and issubclass(fa.Lease, pgfencing.aio.AsyncLease)
    h.report(ok, "the sync and async leases are classes (psycopg Lease, AsyncLease; asyncpg Lease), "
                 "subclasses of pgfencing.aio.AsyncLease for the async ones")


def pool_configure(h, run):
    import psycopg_pool
    table = "ct_pool"
    h.setup_table(table)
    pool = psycopg_pool.ConnectionPool("", min_size=1, max_size=1, configure=fp.register, open=True)
    try:
        with pool.connection() as c:
            pid = c.info.backend_pid
            t = c.execute("SELECT fence FROM ct_pool WHERE id = 1").fetchone()[0]
        with pool.connection() as c:
            same = c.info.backend_pid == pid
            with fp.transaction(c, 2):
                c.execute("UPDATE ct_pool SET v = 'pooled' WHERE id = 1")
        stats = pool.get_stats()
    finally:
        pool.close()
    h.report(same and t == 1 and isinstance(t, int) and stats.get("connections_lost", 0) == 0
             and h.row(table, 1) == ("pooled", 2),
             "psycopg_pool: ConnectionPool(configure=register) keeps its configured connection "
             "(register() leaves no transaction open), tokens load as int, transaction() writes",
             (same, t, stats, h.row(table, 1)))


def multi_resource(h, run):
    resources = [f"ct-multi-a-{run}", f"ct-multi-b-{run}"]
    table = "ct_multi"
    h.setup_table(table)
    conn = fp.connect("", autocommit=True)
    with fp.Lease("", resources, ttl=1.0) as lease:
        time.sleep(3.5)
        rows = [h.lease_row(r) for r in resources]
        ok = (lease.state == "held" and len(lease.tokens or []) == 2
              and all(r[:2] == (t, True) for r, t in zip(rows, lease.tokens or [])))
        with lease.transaction(conn, resource=resources[1]) as tx:
            tx.execute(f"UPDATE {table} SET v = 'multi' WHERE id = 1")
        token_b = lease.token_for(resources[1])
    after = [h.lease_row(r)[1] for r in resources]
    conn.close()
    h.report(ok and h.row(table, 1) == ("multi", token_b) and after == [False, False],
             "psycopg: a lease on two resources (all or none) is renewed past 3.5 TTLs, writes under "
             "either token, and releases both", (rows, h.row(table, 1), after))


def no_prepared_statements(h, run):
    conn = fp.connect("", autocommit=True)
    lease = fp.Lease("", f"ct-prep-{run}", ttl=5)
    lease.acquire()
    lease_conn = lease._connection()
    h.report(conn.prepare_threshold is None and lease_conn.prepare_threshold is None,
             "psycopg: connect() and the lease's connection use no named prepared statements "
             "(prepare_threshold=None: safe behind PgBouncer before 1.21)",
             (conn.prepare_threshold, lease_conn.prepare_threshold))
    timeout = lease_conn.execute("SHOW statement_timeout").fetchone()[0]
    h.report(timeout == "0", "psycopg: the lease leaves no session statement_timeout on its connection", timeout)
    lease.close()
    conn.close()


def callers_transaction(h, run):
    table = "ct_callers"
    h.setup_table(table)
    conn = fp.connect("")  # not autocommit: the caller's transaction
    conn.execute(f"SELECT count(*) FROM {table}")  # opens it
    try:
        with fp.transaction(conn, 5):
            conn.execute(f"UPDATE {table} SET v = 'joined' WHERE id = 1")
        err = None
    except Exception as e:  # noqa: BLE001
        err = e
    conn.rollback()
    conn.close()
    h.report(isinstance(err, pgfencing.TransactionInProgressError) and h.row(table, 1)[0] == "a",
             "psycopg: transaction() inside the caller's open transaction: TransactionInProgressError, "
             "nothing joined or committed", (repr(err), h.row(table, 1)))


def release_lost_lease(h, run):
    """A lost lease is still released on the server: the next holder does
    not wait for the TTL."""
    resource = f"ct-relost-{run}"
    lease = fp.Lease("", resource, ttl=2.0)
    lease.acquire()
    blocker = h.admin()
    blocker.autocommit = False
    blocker.execute("SELECT 1 FROM fencing.lease WHERE resource = %s FOR UPDATE", (resource,))
    lost = lease.lost_event.wait(5)
    blocker.rollback()
    blocker.close()
    live_before = h.lease_row(resource)[1]
    released = lease.release()
    live_after = h.lease_row(resource)[1]
    h.report(lost and live_before and released and live_after is False and lease.lost and lease.closed,
             "psycopg: release() of a lost lease still ends it on the server (True while it was live), "
             "without raising; it stays lost and is closed", (lost, live_before, released, live_after))
    lease.close()
