"""The asyncio lease, shared by psycopg's AsyncConnection and asyncpg.
Build one with pgfencing.psycopg.AsyncLease(...) or
pgfencing.asyncpg.Lease(...) (both subclasses of AsyncLease)."""
import asyncio
import inspect
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, Type

from . import errors
from ._lease import REFUSED, LeaseBase, Resources, monotonic
from ._sql import ACQUIRE_MARGIN

_DEFAULT_WAIT: Any = object()


class Backend:
    """A driver's lease connection: one statement at a time, each in a
    transaction of its own bounded by `seconds` (statement_timeout for that
    transaction only)."""

    errors: Tuple[Type[BaseException], ...] = ()
    canceled: Tuple[Type[BaseException], ...] = ()
    undefined_function: Tuple[Type[BaseException], ...] = ()

    async def one(self, sql: str, args: Sequence[Any], seconds: float) -> Any:
        raise NotImplementedError

    async def drop(self) -> None:
        raise NotImplementedError


class AsyncLease(LeaseBase):
    """A lease renewed by an asyncio task on its own connection.
    `async with lease:` acquires (waiting up to `wait` seconds) and closes.

    lost_event (asyncio.Event) is set and on_lost(lease) called (awaited when
    it is a coroutine function, as a task), once, when a renewal is refused
    or the safe time runs out, before the server's TTL ends and never before
    the lease may have expired there. Each renewal is bounded by the safe time
    left, so a hung connection cannot hold the signal back. release()/close()
    end the lease without the signal (state 'closed', LeaseClosedError)."""

    OPTIONS = ("holder", "ttl", "namespace", "renew_every", "jitter", "margin", "on_lost", "wait")

    def __init__(self, backend: Backend, resource: Resources, writes: Any, *,
                 holder: Optional[str] = None, ttl: float = 30.0, namespace: str = "default",
                 renew_every: Optional[float] = None, jitter: float = 0.2, margin: Optional[float] = None,
                 on_lost: Optional[Callable[..., Any]] = None, wait: Optional[float] = None) -> None:
        super().__init__(resource, holder, ttl, namespace, renew_every, jitter, margin, on_lost, wait)
        self._backend, self._writes = backend, writes
        self._tasks: List["asyncio.Task[None]"] = []
        self.lost_event = asyncio.Event()

    async def acquire(self, wait: Optional[float] = _DEFAULT_WAIT) -> int:
        """The (first) token; LeaseNotAcquiredError when another holder's
        lease stays live for wait seconds (default: the constructor's wait;
        None: do not wait). On a lease already held returns its token."""
        if self._check_acquirable():
            return self.require_live()
        if wait is _DEFAULT_WAIT:
            wait = self.wait
        sql, args = self._acquire_sql(wait)
        sent = monotonic()
        try:
            tokens = await self._backend.one(sql, args, (wait or 0) + ACQUIRE_MARGIN)
        except self._backend.canceled:
            tokens = None
        except self._backend.undefined_function as e:
            raise errors.too_old("fencing_acquire_all", e) from e
        if tokens is None or None in tokens:
            raise errors.LeaseNotAcquiredError(
                f"lease on {self._names()} is held by another holder"
                + (f" (waited {wait} s)" if wait else ""))
        self.tokens = [int(t) for t in tokens]
        self._timing.confirmed(sent)
        if self._needs_renew_at_once(wait, sent):
            await self._renew_at_once()
        self._tasks = [asyncio.create_task(self._renew_loop()), asyncio.create_task(self._watchdog())]
        return self.require_live()

    async def _renew_at_once(self) -> None:
        sent = monotonic()
        try:
            ok = await self._backend.one(*self._renew_sql(), self.ttl - self.margin)
        except Exception:  # any failure is a renewal not confirmed (asyncpg raises non-Postgres errors too)
            await self._backend.drop()
            return  # counted from the acquire's send: conservative
        if ok:
            self._timing.confirmed(sent)
        else:
            self._lose(REFUSED)

    async def release(self) -> bool:
        """Stops renewing and ends the lease on the server: True when the
        server ended a live lease of this token, else False (a lost lease, a
        second call, the server unreachable). Never raises for those. The
        lease is closed afterwards; a lost lease stays lost."""
        if not self._timing.mark_closed():
            return False
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.tokens is None:
            return False
        bound = self._release_bound()
        try:
            return bool(await asyncio.wait_for(self._backend.one(*self._release_sql(), bound), bound + 1))
        except Exception:  # any failure is a renewal not confirmed (asyncpg raises non-Postgres errors too)
            await self._backend.drop()
            return False

    async def close(self) -> None:
        try:
            await self.release()
        finally:
            await self._backend.drop()

    async def __aenter__(self) -> "AsyncLease":
        try:
            await self.acquire()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _fire_lost(self) -> None:
        self.lost_event.set()
        cb = self.on_lost
        if cb is None:
            return
        if inspect.iscoroutinefunction(cb):
            asyncio.get_running_loop().create_task(cb(self))
        else:
            cb(self)

    async def _renew_loop(self) -> None:
        delay = self._timing.next_sleep()
        failures = 0
        while True:
            await asyncio.sleep(delay)
            delay = self._timing.next_sleep()
            if self.state != "held":
                return
            sent = monotonic()
            left = max(self._timing.remaining(), 0.001)
            try:
                ok = await asyncio.wait_for(self._backend.one(*self._renew_sql(), left), left)
            except Exception:  # any failure is a renewal not confirmed (asyncpg raises non-Postgres errors too)
                await self._backend.drop()
                # A broken connection is replaced at once; repeated failures back off.
                delay = self._timing.retry_sleep() if failures else 0.0
                failures += 1
                continue  # retried until the deadline; the watchdog fires the signal
            failures = 0
            if self.closed:
                return
            if ok:
                self._timing.confirmed(sent)
            else:
                self._lose(REFUSED)
                return

    async def _watchdog(self) -> None:
        while self.state == "held":
            await asyncio.sleep(max(self._timing.remaining(), 0.001))

    # -- writing
    @asynccontextmanager
    async def transaction(self, conn: Any, resource: Optional[str] = None) -> AsyncIterator[Any]:
        """BEGIN; SET LOCAL fencing.token; <block>; COMMIT on conn, refused at
        the start and before the commit once lost (LeaseLostError) or closed
        (LeaseClosedError)."""
        token = self.require_live(resource)
        try:
            async with self._writes.transaction(conn, token) as c:
                yield c
                self.require_live(resource)
        except Exception as e:  # the driver's error: TF003/57P01 become LeaseTakenOverError
            taken = self.taken_over(e, bool(getattr(conn, "broken", False)))
            if taken is not None:
                raise taken from e
            raise

    async def _write(self, fn: Callable[..., Awaitable[Any]], conn: Any, *args: Any) -> int:
        try:
            return int(await fn(conn, *args))
        except Exception as e:
            taken = self.taken_over(e, bool(getattr(conn, "broken", False)))
            if taken is not None:
                raise taken from e
            raise

    async def fenced_update(self, conn: Any, table: str, key: Dict[str, Any], changes: Dict[str, Any],
                            raise_stale: bool = True, resource: Optional[str] = None) -> int:
        return await self._write(self._writes.fenced_update, conn, table, self.require_live(resource), key,
                                 changes, raise_stale)

    async def fenced_delete(self, conn: Any, table: str, key: Dict[str, Any], raise_stale: bool = True,
                            resource: Optional[str] = None) -> int:
        return await self._write(self._writes.fenced_delete, conn, table, self.require_live(resource), key,
                                 raise_stale)

    async def fenced_upsert(self, conn: Any, table: str, row: Dict[str, Any], raise_stale: bool = True,
                            resource: Optional[str] = None) -> int:
        return await self._write(self._writes.fenced_upsert, conn, table, self.require_live(resource), row,
                                 raise_stale)

    async def check(self, conn: Any, resource: Optional[str] = None) -> bool:
        return bool(await self._writes.check(conn, resource or self.resource, self.token_for(resource),
                                             self.namespace))
