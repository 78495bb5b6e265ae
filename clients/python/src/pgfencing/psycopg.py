"""fencing for psycopg 3: codecs, typed errors, leases (a thread for
Connection, a task for AsyncConnection), writes under the token.

    import pgfencing.psycopg as fp
    conn = fp.connect("dbname=app", autocommit=True)       # codecs registered
    with fp.Lease("dbname=app", "orders-compactor", ttl=10) as lease:
        lease.acquire(wait=30)
        with lease.transaction(conn) as tx:                 # BEGIN; SET LOCAL fencing.token
            tx.execute("UPDATE orders SET state = 'done' WHERE id = %s", (7,))
"""
import re
import struct
import threading
import weakref
from contextlib import asynccontextmanager, contextmanager

import psycopg
import psycopg.errors
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from . import errors
from ._lease import APPLICATION_NAME, LeaseBase, monotonic
from ._sql import (ACQUIRE, ACQUIRE_ALL, CHECK, DIAGNOSIS_FAILED, EXTENSION_TYPE, RELEASE, RENEW,
                   SET_TOKEN, drive, drive_async, fenced_steps, interval, outcome,
                   token_text)

__all__ = ["register", "register_async", "connect", "async_connect", "Token", "Lease", "AsyncLease",
           "transaction", "async_transaction", "fenced_update", "fenced_delete", "fenced_upsert",
           "acquire_all", "check", "async_fenced_update", "async_fenced_delete",
           "async_fenced_upsert", "async_acquire_all", "async_check", "StaleTokenError",
           "TokenRequiredError"]

_INT8 = struct.Struct("!q")


# ------------------------------------------------------------------ errors
# Subclasses of psycopg.DatabaseError registered for TF001/TF002: psycopg
# raises them itself for every connection of the process.

class StaleTokenError(errors.StaleTokenError, psycopg.DatabaseError, code=errors.STALE_TOKEN,
                      name="STALE_FENCING_TOKEN"):
    __module__ = "pgfencing.psycopg"

    def _server_fields(self):
        d = self.diag
        return d.message_detail, d.schema_name, d.table_name


class TokenRequiredError(errors.TokenRequiredError, psycopg.DatabaseError,
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

    def load(self, data):
        return int(bytes(data))


class TokenBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data):
        return _INT8.unpack(data)[0]


class _TokenTextDumper(Dumper):
    format = Format.TEXT

    def dump(self, obj):
        return str(int(obj)).encode()


class _TokenBinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj):
        return _INT8.pack(obj)


def _register_info(conn, row):
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
    return oid


def register(conn):
    """Registers the fencing_token codecs on a psycopg Connection: tokens
    load as int (text and binary results, arrays too), Token parameters dump
    as fencing_token. Returns the type's OID. For an AsyncConnection, await
    register_async(conn)."""
    with conn.cursor() as cur:
        row = cur.execute(EXTENSION_TYPE).fetchone()
    return _register_info(conn, row)


async def register_async(conn):
    """register() for a psycopg AsyncConnection."""
    async with conn.cursor() as cur:
        await cur.execute(EXTENSION_TYPE)
        row = await cur.fetchone()
    return _register_info(conn, row)


def connect(conninfo="", **kwargs):
    """psycopg.connect() with the codecs registered."""
    conn = psycopg.connect(conninfo, **kwargs)
    try:
        register(conn)
        if not conn.autocommit:
            conn.rollback()  # the type lookup must not leave a transaction open
    except BaseException:
        conn.close()
        raise
    return conn


async def async_connect(conninfo="", **kwargs):
    """psycopg.AsyncConnection.connect() with the codecs registered."""
    conn = await psycopg.AsyncConnection.connect(conninfo, **kwargs)
    try:
        await register_async(conn)
        if not conn.autocommit:
            await conn.rollback()
    except BaseException:
        await conn.close()
        raise
    return conn


# ------------------------------------------------------------------ writing under a token

@contextmanager
def transaction(conn, token):
    """BEGIN; SET LOCAL fencing.token = token; <the block>; COMMIT. On an
    autocommit connection too (psycopg's transaction() opens the block; inside
    an open transaction it is a savepoint, and the token still ends with the
    transaction). Yields conn. A statement of the block that failed while
    the block went on anyway: TransactionAbortedError (the server would turn
    the COMMIT into a ROLLBACK without an error)."""
    with conn.transaction():
        conn.execute(_p(SET_TOKEN), (token_text(token),))
        yield conn
        _refuse_aborted(conn)


def _refuse_aborted(conn):
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
        raise errors.TransactionAbortedError(errors.ABORTED_MESSAGE)


@asynccontextmanager
async def async_transaction(conn, token):
    """transaction() for an AsyncConnection."""
    async with conn.transaction():
        await conn.execute(_p(SET_TOKEN), (token_text(token),))
        yield conn
        _refuse_aborted(conn)


def _p(sql):
    """$n placeholders as psycopg's %s (the shared SQL uses $n in order)."""
    return re.sub(r"\$\d+", "%s", sql)


_HAS_RESULT = weakref.WeakKeyDictionary()  # connection -> the server has fenced_*_result()


def _fenced(conn, kind, table, token, key, jargs, raise_stale):
    def fetch(sql, args):
        return conn.execute(_p(sql), args).fetchone()

    def diagnose(sql, args):
        try:
            with conn.transaction():  # a savepoint inside an open transaction
                return fetch(sql, args)
        except psycopg.Error:
            return DIAGNOSIS_FAILED
    steps = fenced_steps(_HAS_RESULT, conn, kind, table, token, key, jargs, raise_stale)
    return outcome(drive(steps, fetch, diagnose), StaleTokenError)


def fenced_update(conn, table, token, key, changes, raise_stale=True):
    """fenced_update(): rows written. A row refused as stale raises
    StaleTokenError (raise_stale=False: the count only); 0 without an error
    means no row matched. Uses fenced_update_result() where the server has
    it (1.5), else reads the key's HWM after a 0."""
    return _fenced(conn, "update", table, token, key, (key, changes), raise_stale)


def fenced_delete(conn, table, token, key, raise_stale=True):
    return _fenced(conn, "delete", table, token, key, (key,), raise_stale)


def fenced_upsert(conn, table, token, row, raise_stale=True):
    return _fenced(conn, "upsert", table, token, row, (row,), raise_stale)


def acquire_all(conn, resources, holder, ttl, wait=None, namespace="default"):
    """fencing_acquire_all(): a list of tokens (one per resource, in the
    given order), or None when not all were acquired (none is held then)."""
    try:
        row = conn.execute(_p(ACQUIRE_ALL), (list(resources), holder, interval(ttl), interval(wait),
                                             namespace)).fetchone()
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_acquire_all", e) from e
    return None if row[0] is None else [int(t) for t in row[0]]


def check(conn, resource, token, namespace="default"):
    """fencing_check(): is token still current for resource? A check, not a
    fence: the answer can change right after it. Use it before an external
    side effect; writes to the database are fenced by the token itself."""
    try:
        return conn.execute(_p(CHECK), (resource, int(token), namespace)).fetchone()[0]
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_check", e) from e


# ------------------------------------------------------------------ the thread lease

class Lease(LeaseBase):
    """A lease on one resource, renewed by a background thread on its own
    connection (conninfo), so an application transaction never holds up a
    renewal.

    lost_event (threading.Event) is set and on_lost(lease) called, once,
    when a renewal is refused or the safe time (TTL minus margin since the
    last renewal was sent) runs out: before the server's TTL ends. The
    callback runs on the lease's watchdog thread, or on whichever thread
    first reads lease.lost after a pause."""

    def __init__(self, conninfo, resource, *, holder=None, ttl=30.0, namespace="default",
                 renew_every=None, jitter=0.2, margin=None, on_lost=None, **connect_kwargs):
        super().__init__(resource, holder, ttl, namespace, renew_every, jitter, margin, on_lost)
        connect_kwargs.setdefault("application_name", APPLICATION_NAME)
        self._conninfo, self._connect_kwargs = conninfo, connect_kwargs
        self._conn = None
        self._stop = threading.Event()
        self._threads = []
        self.lost_event = threading.Event()

    # -- connection
    def _connection(self):
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._conninfo, autocommit=True, **self._connect_kwargs)
        return self._conn

    def _one(self, sql, args):
        return self._connection().execute(_p(sql), args).fetchone()[0]

    # -- acquire / release
    def acquire(self, wait=None):
        """Acquires the lease, waiting up to wait seconds (None: do not wait)
        for the live one to end. Returns the token; raises
        LeaseNotAcquiredError. Re-acquiring by the same holder returns its
        live token and extends it."""
        if self.token is not None and not self.lost:
            raise RuntimeError("lease already acquired")
        sent = monotonic()
        token = self._one(ACQUIRE, (self.resource, self.holder, interval(self.ttl),
                                    interval(wait), self.namespace))
        if token is None:
            raise errors.LeaseNotAcquiredError(
                f"lease on {self.resource!r} is held by another holder"
                + (f" (waited {wait} s)" if wait else ""))
        self._reset(int(token), sent)
        return self.token

    def _reset(self, token, sent):
        self.token = token
        self._timing.lost_reason = None
        self._timing.confirmed(sent)
        self.lost_event.clear()
        self._stop.clear()
        self._threads = [threading.Thread(target=f, name=f"pgfencing-{n}:{self.resource}", daemon=True)
                         for n, f in (("renew", self._renew_loop), ("watchdog", self._watchdog))]
        for t in self._threads:
            t.start()

    def release(self):
        """Stops renewing and releases the lease (false from the server, for
        a lease already lost, is fine: the next holder fences us anyway)."""
        self._stop.set()
        self._join_threads()
        released = False
        if self.token is not None and self._timing.lost_reason is None:
            try:
                released = bool(self._one(RELEASE, (self.resource, int(self.token),
                                                    self.namespace)))
            except psycopg.Error:
                released = False
        self._timing.mark_lost("released")
        self.released = True
        return released

    def _join_threads(self):
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

    def close(self):
        try:
            self.release()
        finally:
            if self._conn is not None:
                self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the threads
    def _fire_lost(self):
        self.lost_event.set()
        if self.on_lost is not None:
            self.on_lost(self)

    def _renew_loop(self):
        delay = self._timing.next_sleep()
        while not self._stop.wait(delay):
            if self.lost:
                return
            sent = monotonic()
            try:
                ok = self._one(RENEW, (self.resource, int(self.token),
                                       interval(self.ttl), self.namespace))
            except psycopg.Error:
                self._drop_connection()
                delay = self._timing.retry_sleep()
                continue  # retried until the deadline; the watchdog fires the signal
            delay = self._timing.next_sleep()
            if self._stop.is_set():
                return
            if ok:
                self._timing.confirmed(sent)
            else:
                self._lose("renewal refused: the lease expired or another holder took it")
                return

    def _drop_connection(self):
        try:
            if self._conn is not None:
                self._conn.close()
        finally:
            self._conn = None

    def _watchdog(self):
        while not self._stop.is_set():
            if self.lost:
                return
            self._stop.wait(max(self._timing.remaining(), 0.001))

    # -- writing
    @contextmanager
    def transaction(self, conn):
        """transaction(conn, token) that refuses to start, and to commit,
        once the lease is lost (LeaseLostError; the block is rolled back)."""
        token = self.require_live()
        with transaction(conn, token) as c:
            yield c
            self.require_live()

    def fenced_update(self, conn, table, key, changes, raise_stale=True):
        return fenced_update(conn, table, self.require_live(), key, changes, raise_stale)

    def fenced_delete(self, conn, table, key, raise_stale=True):
        return fenced_delete(conn, table, self.require_live(), key, raise_stale)

    def fenced_upsert(self, conn, table, row, raise_stale=True):
        return fenced_upsert(conn, table, self.require_live(), row, raise_stale)

    def check(self, conn=None):
        """fencing_check() of this lease's token (on the lease's connection by default)."""
        return check(conn or self._connection(), self.resource, self.token, self.namespace)


# ------------------------------------------------------------------ the asyncio lease

class _AsyncBackend:
    def __init__(self, conninfo, kwargs):
        self.conninfo, self.kwargs, self.conn = conninfo, kwargs, None

    async def one(self, sql, args):
        if self.conn is None or self.conn.closed:
            self.conn = await async_connect(self.conninfo, autocommit=True, **self.kwargs)
        cur = await self.conn.execute(_p(sql), args)
        return (await cur.fetchone())[0]

    async def drop(self):
        conn, self.conn = self.conn, None
        if conn is not None:
            await conn.close()

    errors = (psycopg.Error,)


def AsyncLease(conninfo, resource, **kwargs):
    """The asyncio lease (pgfencing.aio.AsyncLease) over a psycopg
    AsyncConnection; writes with transaction()/fenced_*() on AsyncConnections."""
    from .aio import AsyncLease as _AsyncLease
    connect_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k not in _AsyncLease.OPTIONS}
    connect_kwargs.setdefault("application_name", APPLICATION_NAME)
    return _AsyncLease(_AsyncBackend(conninfo, connect_kwargs), resource, _PsycopgAsyncWrites, **kwargs)


async def _async_fenced(conn, kind, table, token, key, jargs, raise_stale):
    async def fetch(sql, args):
        return await (await conn.execute(_p(sql), args)).fetchone()

    async def diagnose(sql, args):
        try:
            async with conn.transaction():
                return await fetch(sql, args)
        except psycopg.Error:
            return DIAGNOSIS_FAILED
    steps = fenced_steps(_HAS_RESULT, conn, kind, table, token, key, jargs, raise_stale)
    return outcome(await drive_async(steps, fetch, diagnose), StaleTokenError)


async def async_fenced_update(conn, table, token, key, changes, raise_stale=True):
    """fenced_update() on an AsyncConnection."""
    return await _async_fenced(conn, "update", table, token, key, (key, changes), raise_stale)


async def async_fenced_delete(conn, table, token, key, raise_stale=True):
    return await _async_fenced(conn, "delete", table, token, key, (key,), raise_stale)


async def async_fenced_upsert(conn, table, token, row, raise_stale=True):
    return await _async_fenced(conn, "upsert", table, token, row, (row,), raise_stale)


async def async_acquire_all(conn, resources, holder, ttl, wait=None, namespace="default"):
    try:
        cur = await conn.execute(_p(ACQUIRE_ALL), (list(resources), holder, interval(ttl),
                                                   interval(wait), namespace))
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_acquire_all", e) from e
    tokens = (await cur.fetchone())[0]
    return None if tokens is None else [int(t) for t in tokens]


async def async_check(conn, resource, token, namespace="default"):
    try:
        cur = await conn.execute(_p(CHECK), (resource, int(token), namespace))
    except psycopg.errors.UndefinedFunction as e:
        raise errors.too_old("fencing_check", e) from e
    return (await cur.fetchone())[0]


class _PsycopgAsyncWrites:
    transaction = staticmethod(async_transaction)
    fenced_update = staticmethod(async_fenced_update)
    fenced_delete = staticmethod(async_fenced_delete)
    fenced_upsert = staticmethod(async_fenced_upsert)
    check = staticmethod(async_check)
