"""The asyncio lease, shared by psycopg's AsyncConnection and asyncpg.
Build one with pgfencing.psycopg.AsyncLease(...) or
pgfencing.asyncpg.Lease(...)."""
import asyncio
import inspect
from contextlib import asynccontextmanager

from . import errors
from ._lease import LeaseBase, monotonic
from ._sql import ACQUIRE, RELEASE, RENEW, interval


class AsyncLease(LeaseBase):
    """A lease renewed by an asyncio task on its own connection.

    lost_event (asyncio.Event) is set and on_lost(lease) called (awaited when
    it is a coroutine function, as a task), once, when a renewal is refused
    or the safe time runs out, before the server's TTL ends. Each renewal is
    bounded by the safe time left, so a hung connection cannot hold the
    signal back."""

    OPTIONS = ("holder", "ttl", "namespace", "renew_every", "jitter", "margin", "on_lost")

    def __init__(self, backend, resource, writes, *, holder=None, ttl=30.0, namespace="default",
                 renew_every=None, jitter=0.2, margin=None, on_lost=None):
        super().__init__(resource, holder, ttl, namespace, renew_every, jitter, margin, on_lost)
        self._backend, self._writes = backend, writes
        self._tasks = []
        self.lost_event = asyncio.Event()

    async def acquire(self, wait=None):
        """The token; LeaseNotAcquiredError when another holder's lease
        stays live for wait seconds (None: do not wait)."""
        if self.token is not None and not self.lost:
            raise RuntimeError("lease already acquired")
        sent = monotonic()
        token = await self._backend.one(ACQUIRE, (self.resource, self.holder, interval(self.ttl),
                                                  interval(wait), self.namespace))
        if token is None:
            raise errors.LeaseNotAcquiredError(
                f"lease on {self.resource!r} is held by another holder"
                + (f" (waited {wait} s)" if wait else ""))
        self.token = int(token)
        self._timing.lost_reason = None
        self._timing.confirmed(sent)
        self.lost_event.clear()
        self._tasks = [asyncio.create_task(self._renew_loop()), asyncio.create_task(self._watchdog())]
        return self.token

    async def release(self):
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        released = False
        if self.token is not None and self._timing.lost_reason is None:
            try:
                released = bool(await asyncio.wait_for(
                    self._backend.one(RELEASE, (self.resource, int(self.token), self.namespace)),
                    self.ttl))
            except (asyncio.TimeoutError, *self._backend.errors):
                released = False
        self._timing.mark_lost("released")
        self.released = True
        return released

    async def close(self):
        try:
            await self.release()
        finally:
            await self._backend.drop()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def _fire_lost(self):
        self.lost_event.set()
        cb = self.on_lost
        if cb is None:
            return
        if inspect.iscoroutinefunction(cb):
            asyncio.get_running_loop().create_task(cb(self))
        else:
            cb(self)

    async def _renew_loop(self):
        delay = self._timing.next_sleep()
        while True:
            await asyncio.sleep(delay)
            delay = self._timing.next_sleep()
            if self.lost:
                return
            sent = monotonic()
            try:
                ok = await asyncio.wait_for(
                    self._backend.one(RENEW, (self.resource, int(self.token), interval(self.ttl),
                                              self.namespace)),
                    max(self._timing.remaining(), 0.001))
            except (asyncio.TimeoutError, OSError, *self._backend.errors):
                await self._backend.drop()
                delay = self._timing.retry_sleep()
                continue  # retried until the deadline; the watchdog fires the signal
            if ok:
                self._timing.confirmed(sent)
            else:
                self._lose("renewal refused: the lease expired or another holder took it")
                return

    async def _watchdog(self):
        while not self.lost:
            await asyncio.sleep(max(self._timing.remaining(), 0.001))

    # -- writing
    @asynccontextmanager
    async def transaction(self, conn):
        """BEGIN; SET LOCAL fencing.token; <block>; COMMIT on conn, refused
        (LeaseLostError) at the start and before the commit once lost."""
        token = self.require_live()
        async with self._writes.transaction(conn, token) as c:
            yield c
            self.require_live()

    async def fenced_update(self, conn, table, key, changes, raise_stale=True):
        return await self._writes.fenced_update(conn, table, self.require_live(), key, changes,
                                                raise_stale)

    async def fenced_delete(self, conn, table, key, raise_stale=True):
        return await self._writes.fenced_delete(conn, table, self.require_live(), key, raise_stale)

    async def fenced_upsert(self, conn, table, row, raise_stale=True):
        return await self._writes.fenced_upsert(conn, table, self.require_live(), row, raise_stale)

    async def check(self, conn):
        return await self._writes.check(conn, self.resource, self.token, self.namespace)
