"""fencing for psycopg 3: codecs, typed errors, leases (a thread for
Connection, a task for AsyncConnection), writes under the token.

    import pgfencing.psycopg as fp
    conn = fp.connect("dbname=app", autocommit=True)       # codecs registered
    with fp.Lease("dbname=app", "orders-compactor", ttl=10, wait=30) as lease:   # acquires
        with lease.transaction(conn) as tx:                 # BEGIN; SET LOCAL fencing.token
            tx.execute("UPDATE orders SET state = 'done' WHERE id = %s", (7,))
"""
import re
import struct
import threading
import weakref
from contextlib import asynccontextmanager, contextmanager
from typing import (Any, AsyncIterator, Callable, Dict, Iterator, List, Optional, Sequence, Tuple,
                    Union)

import psycopg
import psycopg.errors
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from . import aio as _aio
from . import errors
from ._lease import APPLICATION_NAME, REFUSED, LeaseBase, Resources, monotonic
from ._sql import (ACQUIRE_ALL, ACQUIRE_MARGIN, CHECK, DIAGNOSIS_FAILED, EXTENSION_TYPE,
                   bounded_script, drive, drive_async, fenced_steps, interval,
                   outcome, set_token)

_DEFAULT_WAIT: Any = object()  # acquire(): the constructor's wait
AnyConnection = Union["psycopg.Connection[Any]", "psycopg.AsyncConnection[Any]"]

__all__ = ["register", "register_async", "connect", "async_connect", "Token", "Lease", "AsyncLease",
           "transaction", "async_transaction", "fenced_update", "fenced_delete", "fenced_upsert",
           "acquire_all", "check", "async_fenced_update", "async_fenced_delete",
           "async_fenced_upsert", "async_acquire_all", "async_check", "StaleTokenError",
           "TokenRequiredError"]

_INT8 = struct.Struct("!q")


# ------------------------------------------------------------------ errors
# Subclasses of psycopg.DatabaseError registered for TF001/TF002: psycopg
# raises them itself for every connection of the process.

class StaleTokenError(errors.StaleTokenError, psycopg.DatabaseError,  # type: ignore[misc]
                      code=errors.STALE_TOKEN,
                      name="STALE_FENCING_TOKEN"):
    __module__ = "pgfencing.psycopg"

    def _server_fields(self) -> Tuple[Optional[str], Optional[str], Optional[str]]:
        d = self.diag
        return d.message_detail, d.schema_name, d.table_name


class TokenRequiredError(errors.TokenRequiredError, psycopg.DatabaseError,  # type: ignore[misc]
                         code=errors.TOKEN_REQUIRED, name="FENCING_TOKEN_REQUIRED"):
    __module__ = "pgfencing.psycopg"


# ------------------------------------------------------------------ codecs

class Token(int):
    """An int that psycopg sends as fencing_token (text or binary) once
    register() ran. Plain ints work too (sent as smallint ... numeric and
    converted by the server's casts); Token pins the parameter's type."""

    __slots__ = ()


class TokenTextLoader(Loader):
    format = Format.TEXT

    def load(self, data: Any) -> int:
        return int(bytes(data))


class TokenBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: Any) -> int:
        return int(_INT8.unpack(data)[0])


class _TokenTextDumper(Dumper):
    format = Format.TEXT

    def dump(self, obj: Any) -> bytes:
        return str(int(obj)).encode()


class _TokenBinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return _INT8.pack(obj)


def _register_info(conn: AnyConnection, row: Optional[Tuple[Any, ...]]) -> int:
    if row is None:
        raise psycopg.errors.UndefinedObject("type fencing_token not found: "
                                             "CREATE EXTENSION fencing in this database")
    oid, array_oid = row
    info = TypeInfo("fencing_token", oid, array_oid)
    info.register(conn)
    conn.adapters.register_loader(oid, TokenTextLoader)
    conn.adapters.register_loader(oid, TokenBinaryLoader)
    attrs = {"oid": oid}
    conn.adapters.register_dumper(Token, type("TokenTextDumper", (_TokenTextDumper,), attrs))
    conn.adapters.register_dumper(Token, type("TokenBinaryDumper", (_TokenBinaryDumper,), attrs))
    return int(oid)


_IDLE = psycopg.pq.TransactionStatus.IDLE


def register(conn: "psycopg.Connection[Any]") -> int:
    """Registers the fencing_token codecs on a psycopg Connection: tokens
    load as int (text and binary results, arrays too), Token parameters dump
    as fencing_token. Returns the type's OID. Leaves the connection in the
    transaction state it found it in (a psycopg_pool `configure=` callback:
    ConnectionPool(..., configure=register)). For an AsyncConnection, await
    register_async(conn)."""
    idle = conn.info.transaction_status == _IDLE
    try:
        with conn.cursor() as cur:
            row = cur.execute(EXTENSION_TYPE, prepare=False).fetchone()
    finally:
        if idle and conn.info.transaction_status != _IDLE:
            conn.rollback()  # the type lookup must not leave a transaction open
    return _register_info(conn, row)


async def register_async(conn: "psycopg.AsyncConnection[Any]") -> int:
    """register() for a psycopg AsyncConnection (AsyncConnectionPool's configure=)."""
    idle = conn.info.transaction_status == _IDLE
    try:
        async with conn.cursor() as cur:
            await cur.execute(EXTENSION_TYPE, prepare=False)
            row = await cur.fetchone()
    finally:
        if idle and conn.info.transaction_status != _IDLE:
            await conn.rollback()
    return _register_info(conn, row)


def connect(conninfo: str = "", **kwargs: Any) -> "psycopg.Connection[Any]":
    """psycopg.connect() with the codecs registered. prepare_threshold
    defaults to None (no named server-side prepared statements: safe behind
    PgBouncer in transaction mode before 1.21, docs/poolers.md); pass
    prepare_threshold=5 for psycopg's own default on a direct connection."""
    kwargs.setdefault("prepare_threshold", None)
    conn = psycopg.connect(conninfo, **kwargs)
    try:
        register(conn)
    except BaseException:
        conn.close()
        raise
    return conn


async def async_connect(conninfo: str = "", **kwargs: Any) -> "psycopg.AsyncConnection[Any]":
    """psycopg.AsyncConnection.connect() with the codecs registered (and
    prepare_threshold=None unless given, as connect())."""
    kwargs.setdefault("prepare_threshold", None)
    conn: "psycopg.AsyncConnection[Any]" = await psycopg.AsyncConnection.connect(conninfo, **kwargs)
    try:
        await register_async(conn)
    except BaseException:
        await conn.close()
        raise
    return conn


# ------------------------------------------------------------------ writing under a token

@contextmanager
def transaction(conn: "psycopg.Connection[Any]", token: int) -> Iterator["psycopg.Connection[Any]"]:
    """BEGIN; SET LOCAL fencing.token = token; <the block>; COMMIT, on an
    autocommit connection or an idle one. A connection already inside a
    transaction is refused (TransactionInProgressError): the helper never
    joins, commits or rolls back the caller's transaction. Yields conn. A
    statement of the block that failed while the block went on anyway:
    TransactionAbortedError (the server would turn the COMMIT into a ROLLBACK
    without an error)."""
    _refuse_open(conn)
    statement = set_token(token)
    with conn.transaction():
        conn.execute(statement, prepare=False)
        yield conn
        _refuse_aborted(conn)


def _refuse_open(conn: AnyConnection) -> None:
    if conn.info.transaction_status != _IDLE:
        raise errors.TransactionInProgressError(
            "the connection is inside a transaction: the fencing transaction helper runs only on a "
            "connection outside one (it never commits yours); commit first, or SET LOCAL fencing.token "
            "in your own transaction")


def _refuse_aborted(conn: AnyConnection) -> None:
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
        raise errors.TransactionAbortedError(errors.ABORTED_MESSAGE)


@asynccontextmanager
async def async_transaction(conn: "psycopg.AsyncConnection[Any]",
                            token: int) -> AsyncIterator["psycopg.AsyncConnection[Any]"]:
    """transaction() for an AsyncConnection."""
    _refuse_open(conn)
    statement = set_token(token)
    async with conn.transaction():
        await conn.execute(statement, prepare=False)
        yield conn
        _refuse_aborted(conn)


def _p(sql: str) -> str:
    """$n placeholders as psycopg's %s (the shared SQL uses $n in order)."""
    return re.sub(r"\$\d+", "%s", sql)


_HAS_RESULT: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()  # connection -> the server has fenced_*_result()


def _fenced(conn: "psycopg.Connection[Any]", kind: str, table: str, token: int, key: Any, jargs: Tuple[Any, ...],
            raise_stale: bool) -> int:
    def fetch(sql: str, args: Tuple[Any, ...]) -> Any:
        return conn.execute(_p(sql), args).fetchone()

    def diagnose(sql: str, args: Tuple[Any, ...]) -> Any:
        try:
            with conn.transaction():  # a savepoint inside an open transaction
                return fetch(sql, args)
        except psycopg.Error:
            return DIAGNOSIS_FAILED
    steps = fenced_steps(_HAS_RESULT, conn, kind, table, token, key, jargs, raise_stale)
    return outcome(drive(steps, fetch, diagnose), StaleTokenError)


def fenced_update(conn: "psycopg.Connection[Any]", table: str, token: int, key: Dict[str, Any], changes: Dict[str, Any],
                  raise_stale: bool = True) -> int:
    """fenced_update(): rows written. A row refused as stale raises
    StaleTokenError (raise_stale=False: the count only); 0 without an error
    means no row matched. Uses fenced_update_result() where the server has
    it (1.5), else reads the key's HWM after a 0."""
    return _fenced(conn, "update", table, token, key, (key, changes), raise_stale)


def fenced_delete(conn: "psycopg.Connection[Any]", table: str, token: int, key: Dict[str, Any],
                  raise_stale: bool = True) -> int:
    return _fenced(conn, "delete", table, token, key, (key,), raise_stale)


def fenced_upsert(conn: "psycopg.Connection[Any]", table: str, token: int, row: Dict[str, Any],
                  raise_stale: bool = True) -> int:
    return _fenced(conn, "upsert", table, token, row, (row,), raise_stale)


def acquire_all(conn: "psycopg.Connection[Any]", resources: Sequence[str], holder: str, ttl: float,
                wait: Optional[float] = None, namespace: str = "default") -> Optional[List[int]]:
    """fencing_acquire_all(): a list of tokens (one per resource, in the
    given order), or None when not all were acquired (none is held then)."""
    try:
        row = conn.execute(_p(ACQUIRE_ALL), (list(resources), holder, interval(ttl), interval(wait),
                                             namespace)).fetchone()
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_acquire_all", e) from e
    return None if row is None or row[0] is None else [int(t) for t in row[0]]


def check(conn: "psycopg.Connection[Any]", resource: str, token: int, namespace: str = "default") -> bool:
    """fencing_check(): is token still current for resource? A check, not a
    fence: the answer can change right after it. Use it before an external
    side effect; writes to the database are fenced by the token itself."""
    try:
        row = conn.execute(_p(CHECK), (resource, int(token), namespace)).fetchone()
        return bool(row and row[0])
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_check", e) from e


# ------------------------------------------------------------------ the thread lease

class Lease(LeaseBase):
    """A lease on one resource (or, given a list, on several, all or none),
    renewed by a background thread on its own connection (conninfo), so an
    application transaction never holds up a renewal. `with Lease(...) as
    lease:` acquires (waiting up to `wait` seconds) and closes at the end.

    lost_event (threading.Event) is set and on_lost(lease) called, once,
    when a renewal is refused or the safe time (TTL minus margin since the
    send of the call that last set the expiry) runs out: before the server's
    TTL ends, never before the lease may have expired there. The callback
    runs on the lease's watchdog thread, or on whichever thread first reads
    lease.lost after a pause. release()/close() end the lease without it:
    see closed and state (clients/CONTRACT.md)."""

    def __init__(self, conninfo: str = "", resource: Resources = "", *, holder: Optional[str] = None,
                 ttl: float = 30.0, namespace: str = "default", renew_every: Optional[float] = None,
                 jitter: float = 0.2, margin: Optional[float] = None,
                 on_lost: Optional[Callable[["Lease"], object]] = None, wait: Optional[float] = None,
                 **connect_kwargs: Any) -> None:
        super().__init__(resource, holder, ttl, namespace, renew_every, jitter, margin, on_lost, wait)
        connect_kwargs.setdefault("application_name", APPLICATION_NAME)
        connect_kwargs.setdefault("prepare_threshold", None)
        self._conninfo, self._connect_kwargs = conninfo, connect_kwargs
        self._conn: Optional[psycopg.Connection[Any]] = None
        self._stop = threading.Event()
        self._threads: List[threading.Thread] = []
        self.lost_event = threading.Event()

    # -- connection
    def _connection(self) -> "psycopg.Connection[Any]":
        if self._conn is None or self._conn.closed:
            # No codecs: the lease's statements return text[] and bool.
            self._conn = psycopg.connect(self._conninfo, autocommit=True, **self._connect_kwargs)
        return self._conn

    def _bounded(self, sql: str, args: Sequence[Any], seconds: float) -> Any:
        """One statement bounded by statement_timeout for its own implicit
        transaction only (nothing stays on the connection), one round trip."""
        with psycopg.ClientCursor(self._connection()) as cur:
            cur.execute(bounded_script(_p(sql), seconds), args)
            cur.nextset()
            row = cur.fetchone()
        return None if row is None else row[0]

    # -- acquire / release
    def acquire(self, wait: Optional[float] = _DEFAULT_WAIT) -> int:
        """Acquires the lease, waiting up to wait seconds (default: the
        constructor's wait; None: do not wait) for the live one to end.
        Returns the (first) token; raises LeaseNotAcquiredError. On a lease
        already held returns its token."""
        if self._check_acquirable():
            return self.require_live()
        if wait is _DEFAULT_WAIT:
            wait = self.wait
        sql, args = self._acquire_sql(wait)
        sent = monotonic()
        try:
            tokens = self._bounded(sql, args, (wait or 0) + ACQUIRE_MARGIN)
        except psycopg.errors.QueryCanceled:
            tokens = None
        except psycopg.errors.UndefinedFunction as e:
            raise errors.too_old("fencing_acquire_all", e) from e
        if tokens is None or None in tokens:
            raise errors.LeaseNotAcquiredError(
                f"lease on {self._names()} is held by another holder"
                + (f" (waited {wait} s)" if wait else ""))
        self.tokens = [int(t) for t in tokens]
        self._timing.confirmed(sent)
        if self._needs_renew_at_once(wait, sent):
            self._renew_at_once(sent)
        self._start()
        return self.require_live()

    def _renew_at_once(self, acquire_sent: float) -> None:
        sent = monotonic()
        try:
            ok = self._bounded(*self._renew_sql(), self.ttl - self.margin)
        except psycopg.Error:
            self._drop_connection()
            return  # counted from the acquire's send: conservative
        if ok:
            self._timing.confirmed(sent)
        else:
            self._lose(REFUSED)

    def _start(self) -> None:
        self._stop.clear()
        self._threads = [threading.Thread(target=f, name=f"pgfencing-{n}:{self.resource}", daemon=True)
                         for n, f in (("renew", self._renew_loop), ("watchdog", self._watchdog))]
        for t in self._threads:
            t.start()

    def release(self) -> bool:
        """Stops renewing and ends the lease on the server. True when the
        server ended a live lease of this token; False otherwise (a lost
        lease, already released, the server unreachable: it then ends at its
        TTL). Never raises for those. The lease is closed afterwards
        (LeaseClosedError on every write), and a lost lease stays lost."""
        if not self._timing.mark_closed():
            return False
        self._stop.set()
        self._join_threads()
        if self.tokens is None:
            return False
        try:
            return bool(self._bounded(*self._release_sql(), self._release_bound()))
        except psycopg.Error:
            self._drop_connection()
            return False

    def _join_threads(self) -> None:
        others = [t for t in self._threads if t is not threading.current_thread()]
        for t in others:
            t.join(timeout=0.5)
        if self._conn is not None and any(t.is_alive() for t in others):
            try:
                self._conn.cancel()  # a renewal stuck on a lock or a hung server
            except psycopg.Error:
                pass
            for t in others:
                t.join(timeout=self._timing.ttl)

    def close(self) -> None:
        """release(), then closes the lease's connection. Idempotent."""
        try:
            self.release()
        finally:
            if self._conn is not None:
                self._conn.close()

    def __enter__(self) -> "Lease":
        try:
            self.acquire()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the threads
    def _fire_lost(self) -> None:
        self.lost_event.set()
        if self.on_lost is not None:
            self.on_lost(self)

    def _renew_loop(self) -> None:
        delay = self._timing.next_sleep()
        failures = 0
        while not self._stop.wait(delay):
            if self.state != "held":
                return
            sent = monotonic()
            try:
                ok = self._bounded(*self._renew_sql(), self._timing.remaining())
            except psycopg.Error:
                if self._stop.is_set():
                    return
                self._drop_connection()
                # A broken connection is replaced at once; repeated failures back off.
                delay = self._timing.retry_sleep() if failures else 0.0
                failures += 1
                continue  # retried until the deadline; the watchdog fires the signal
            failures = 0
            delay = self._timing.next_sleep()
            if self._stop.is_set():
                return
            if ok:
                self._timing.confirmed(sent)
            else:
                self._lose(REFUSED)
                return

    def _drop_connection(self) -> None:
        try:
            if self._conn is not None:
                self._conn.close()
        finally:
            self._conn = None

    def _watchdog(self) -> None:
        while not self._stop.is_set():
            if self.state != "held":
                return
            self._stop.wait(max(self._timing.remaining(), 0.001))

    # -- writing
    @contextmanager
    def transaction(self, conn: "psycopg.Connection[Any]",
                    resource: Optional[str] = None) -> Iterator["psycopg.Connection[Any]"]:
        """transaction(conn, token) that refuses to start, and to commit,
        once the lease is lost (LeaseLostError) or closed (LeaseClosedError);
        the block is then rolled back."""
        token = self.require_live(resource)
        try:
            with transaction(conn, token) as c:
                yield c
                self.require_live(resource)
        except psycopg.Error as e:
            self._raise_taken_over(e, conn)
            raise

    def _raise_taken_over(self, e: psycopg.Error, conn: "psycopg.Connection[Any]") -> None:
        taken = self.taken_over(e, conn.broken)
        if taken is not None:
            raise taken from e

    def _write(self, fn: Callable[..., int], conn: "psycopg.Connection[Any]", *args: Any) -> int:
        try:
            return fn(conn, *args)
        except psycopg.Error as e:
            self._raise_taken_over(e, conn)
            raise

    def fenced_update(self, conn: "psycopg.Connection[Any]", table: str, key: Dict[str, Any],
                      changes: Dict[str, Any], raise_stale: bool = True, resource: Optional[str] = None) -> int:
        return self._write(fenced_update, conn, table, self.require_live(resource), key, changes, raise_stale)

    def fenced_delete(self, conn: "psycopg.Connection[Any]", table: str, key: Dict[str, Any],
                      raise_stale: bool = True, resource: Optional[str] = None) -> int:
        return self._write(fenced_delete, conn, table, self.require_live(resource), key, raise_stale)

    def fenced_upsert(self, conn: "psycopg.Connection[Any]", table: str, row: Dict[str, Any],
                      raise_stale: bool = True, resource: Optional[str] = None) -> int:
        return self._write(fenced_upsert, conn, table, self.require_live(resource), row, raise_stale)

    def check(self, conn: "Optional[psycopg.Connection[Any]]" = None, resource: Optional[str] = None) -> bool:
        """fencing_check() of this lease's token (on the lease's connection by default)."""
        return check(conn or self._connection(), resource or self.resource, self.token_for(resource),
                     self.namespace)


# ------------------------------------------------------------------ the asyncio lease

class _AsyncBackend(_aio.Backend):
    errors = (psycopg.Error,)
    canceled = (psycopg.errors.QueryCanceled,)
    undefined_function = (psycopg.errors.UndefinedFunction,)

    def __init__(self, conninfo: str, kwargs: Dict[str, Any]) -> None:
        self.conninfo, self.kwargs = conninfo, kwargs
        self.conn: "Optional[psycopg.AsyncConnection[Any]]" = None

    async def one(self, sql: str, args: Sequence[Any], seconds: float) -> Any:
        if self.conn is None or self.conn.closed:
            # No codecs: the lease's statements return text[] and bool.
            self.conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True, **self.kwargs)
        conn = self.conn
        assert conn is not None
        async with psycopg.AsyncClientCursor(conn) as cur:
            await cur.execute(bounded_script(_p(sql), seconds), args)
            cur.nextset()
            row = await cur.fetchone()
        return None if row is None else row[0]

    async def drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            await conn.close()


class AsyncLease(_aio.AsyncLease):
    """The asyncio lease (pgfencing.aio.AsyncLease) over a psycopg
    AsyncConnection to conninfo (other keyword arguments go to
    AsyncConnection.connect()); writes with transaction()/fenced_*() on
    AsyncConnections. `async with AsyncLease(...) as lease:` acquires."""

    def __init__(self, conninfo: str = "", resource: Resources = "", **kwargs: Any) -> None:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in _aio.AsyncLease.OPTIONS}
        kwargs.setdefault("application_name", APPLICATION_NAME)
        kwargs.setdefault("prepare_threshold", None)
        super().__init__(_AsyncBackend(conninfo, kwargs), resource, _PsycopgAsyncWrites, **options)


async def _async_fenced(conn: "psycopg.AsyncConnection[Any]", kind: str, table: str, token: int, key: Any,
                        jargs: Tuple[Any, ...], raise_stale: bool) -> int:
    async def fetch(sql: str, args: Tuple[Any, ...]) -> Any:
        return await (await conn.execute(_p(sql), args)).fetchone()

    async def diagnose(sql: str, args: Tuple[Any, ...]) -> Any:
        try:
            async with conn.transaction():
                return await fetch(sql, args)
        except psycopg.Error:
            return DIAGNOSIS_FAILED
    steps = fenced_steps(_HAS_RESULT, conn, kind, table, token, key, jargs, raise_stale)
    return outcome(await drive_async(steps, fetch, diagnose), StaleTokenError)


async def async_fenced_update(conn: "psycopg.AsyncConnection[Any]", table: str, token: int, key: Dict[str, Any],
                              changes: Dict[str, Any], raise_stale: bool = True) -> int:
    """fenced_update() on an AsyncConnection."""
    return await _async_fenced(conn, "update", table, token, key, (key, changes), raise_stale)


async def async_fenced_delete(conn: "psycopg.AsyncConnection[Any]", table: str, token: int, key: Dict[str, Any],
                              raise_stale: bool = True) -> int:
    return await _async_fenced(conn, "delete", table, token, key, (key,), raise_stale)


async def async_fenced_upsert(conn: "psycopg.AsyncConnection[Any]", table: str, token: int, row: Dict[str, Any],
                              raise_stale: bool = True) -> int:
    return await _async_fenced(conn, "upsert", table, token, row, (row,), raise_stale)


async def async_acquire_all(conn: "psycopg.AsyncConnection[Any]", resources: Sequence[str], holder: str, ttl: float,
                            wait: Optional[float] = None,
                            namespace: str = "default") -> Optional[List[int]]:
    try:
        cur = await conn.execute(_p(ACQUIRE_ALL), (list(resources), holder, interval(ttl),
                                                   interval(wait), namespace))
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_acquire_all", e) from e
    row = await cur.fetchone()
    return None if row is None or row[0] is None else [int(t) for t in row[0]]


async def async_check(conn: "psycopg.AsyncConnection[Any]", resource: str, token: int, namespace: str = "default") -> bool:
    try:
        cur = await conn.execute(_p(CHECK), (resource, int(token), namespace))
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_check", e) from e
    row = await cur.fetchone()
    return bool(row and row[0])


class _PsycopgAsyncWrites:
    transaction = staticmethod(async_transaction)
    fenced_update = staticmethod(async_fenced_update)
    fenced_delete = staticmethod(async_fenced_delete)
    fenced_upsert = staticmethod(async_fenced_upsert)
    check = staticmethod(async_check)
