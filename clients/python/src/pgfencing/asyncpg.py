"""fencing for asyncpg: codecs, typed errors, the asyncio lease, writes
under the token.

    import pgfencing.asyncpg as fa
    conn = await fa.connect("postgresql:///app")              # codecs registered
    async with fa.Lease("postgresql:///app", "orders-compactor", ttl=10, wait=30) as lease:
        async with lease.transaction(conn):                     # BEGIN; SET LOCAL fencing.token
            await conn.execute("UPDATE orders SET state = 'done' WHERE id = $1", 7)
"""
import asyncio
import weakref
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple

import asyncpg  # type: ignore[import]
import asyncpg.exceptions  # type: ignore[import]

from . import errors
from ._lease import APPLICATION_NAME, Resources
from ._sql import (ACQUIRE_ALL, CHECK, DIAGNOSIS_FAILED, EXTENSION_SCHEMA,
                   drive_async, fenced_steps, interval, outcome, set_token)
from .aio import AsyncLease, Backend

__all__ = ["register", "connect", "create_pool", "Lease", "transaction", "fenced_update",
           "fenced_delete", "fenced_upsert", "acquire_all", "check", "StaleTokenError",
           "TokenRequiredError"]


# ------------------------------------------------------------------ errors
# asyncpg maps a SQLSTATE to the PostgresError subclass that declares it;
# without these, TF001/TF002 come out as UnknownPostgresError, a
# FatalPostgresError ("should result in server disconnection").

class StaleTokenError(errors.StaleTokenError, asyncpg.PostgresError):  # type: ignore[misc]
    sqlstate = errors.STALE_TOKEN

    def _server_fields(self) -> Tuple[Optional[str], Optional[str], Optional[str]]:
        return self.detail, self.schema_name, self.table_name


class TokenRequiredError(errors.TokenRequiredError, asyncpg.PostgresError):  # type: ignore[misc]
    sqlstate = errors.TOKEN_REQUIRED


# ------------------------------------------------------------------ codecs

async def register(conn: Any) -> str:
    """fencing_token as int over asyncpg's binary int8 codec (the type's
    send/recv are int8's): Python ints as parameters, ints in results, exact
    at 9223372036854775807; fencing_token[] follows. Returns the schema."""
    schema = await conn.fetchval(EXTENSION_SCHEMA)
    if schema is None:
        raise asyncpg.exceptions.UndefinedObjectError(
            "extension fencing is not installed in this database")
    await conn.set_builtin_type_codec("fencing_token", schema=schema, codec_name="int8")
    return str(schema)


async def connect(dsn: Optional[str] = None, **kwargs: Any) -> Any:
    """asyncpg.connect() with the codecs registered."""
    conn = await asyncpg.connect(dsn, **kwargs)
    try:
        await register(conn)
    except BaseException:
        await conn.close()
        raise
    return conn


def create_pool(dsn: Optional[str] = None, *, init: Optional[Callable[[Any], Awaitable[None]]] = None,
                **kwargs: Any) -> Any:
    """asyncpg.create_pool() whose connections have the codecs registered
    (before the caller's own init, if any)."""
    async def _init(conn: Any) -> None:
        await register(conn)
        if init is not None:
            await init(conn)
    return asyncpg.create_pool(dsn, init=_init, **kwargs)


# ------------------------------------------------------------------ writing under a token

@asynccontextmanager
async def transaction(conn: Any, token: int) -> AsyncIterator[Any]:
    """BEGIN; SET LOCAL fencing.token = token; <block>; COMMIT. A connection
    already inside a transaction is refused (TransactionInProgressError): the
    helper never joins, commits or rolls back the caller's. Yields conn. A statement of the block that failed
    while the block went on anyway: TransactionAbortedError (the server would
    turn the COMMIT into a ROLLBACK without an error; asyncpg does not expose
    the transaction status, so one empty statement finds out)."""
    if conn.is_in_transaction():
        raise errors.TransactionInProgressError(
            "the connection is inside a transaction: the fencing transaction helper runs only on a "
            "connection outside one (it never commits yours)")
    statement = set_token(token)
    async with conn.transaction():
        await conn.execute(statement)
        yield conn
        try:
            await conn.execute("SELECT")
        except asyncpg.exceptions.InFailedSQLTransactionError as e:
            raise errors.TransactionAbortedError(errors.ABORTED_MESSAGE) from e


_HAS_RESULT: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()  # connection -> the server has fenced_*_result()


async def _fenced(conn: Any, kind: str, table: str, token: int, key: Any, jargs: Tuple[Any, ...],
                 raise_stale: bool) -> int:
    async def fetch(sql: str, args: Tuple[Any, ...]) -> Any:
        row = await conn.fetchrow(sql, *args)
        return None if row is None else tuple(row)

    async def diagnose(sql: str, args: Tuple[Any, ...]) -> Any:
        try:
            async with conn.transaction():  # a savepoint inside an open transaction
                return await fetch(sql, args)
        except asyncpg.PostgresError:
            return DIAGNOSIS_FAILED
    steps = fenced_steps(_HAS_RESULT, conn, kind, table, token, key, jargs, raise_stale)
    return outcome(await drive_async(steps, fetch, diagnose), StaleTokenError)


async def fenced_update(conn: Any, table: str, token: int, key: Dict[str, Any], changes: Dict[str, Any],
                        raise_stale: bool = True) -> int:
    """fenced_update(): rows written. A row refused as stale raises
    StaleTokenError (raise_stale=False: the count only); 0 without an error
    means no row matched."""
    return await _fenced(conn, "update", table, token, key, (key, changes), raise_stale)


async def fenced_delete(conn: Any, table: str, token: int, key: Dict[str, Any], raise_stale: bool = True) -> int:
    return await _fenced(conn, "delete", table, token, key, (key,), raise_stale)


async def fenced_upsert(conn: Any, table: str, token: int, row: Dict[str, Any], raise_stale: bool = True) -> int:
    return await _fenced(conn, "upsert", table, token, row, (row,), raise_stale)


async def acquire_all(conn: Any, resources: Sequence[str], holder: str, ttl: float,
                      wait: Optional[float] = None, namespace: str = "default") -> Optional[List[int]]:
    """fencing_acquire_all(): a list of tokens in the given order, or None
    when not all were acquired (none is held then)."""
    try:
        tokens = await conn.fetchval(ACQUIRE_ALL, list(resources), holder, interval(ttl),
                                     interval(wait), namespace)
    except asyncpg.exceptions.UndefinedFunctionError as e:
        raise errors.too_old("fencing_acquire_all", e) from e
    return None if tokens is None else [int(t) for t in tokens]


async def check(conn: Any, resource: str, token: int, namespace: str = "default") -> bool:
    """fencing_check(): is token still current for resource? A check, not a
    fence (the answer can change right after): for external side effects."""
    try:
        return bool(await conn.fetchval(CHECK, resource, int(token), namespace))
    except asyncpg.exceptions.UndefinedFunctionError as e:
        raise errors.too_old("fencing_check", e) from e


# ------------------------------------------------------------------ the lease

class _Backend(Backend):
    errors = (asyncpg.PostgresError, asyncpg.InterfaceError)
    canceled = (asyncpg.exceptions.QueryCanceledError, asyncio.TimeoutError)
    undefined_function = (asyncpg.exceptions.UndefinedFunctionError,)

    def __init__(self, dsn: Optional[str], kwargs: Dict[str, Any]) -> None:
        self.dsn, self.kwargs, self.conn = dsn, kwargs, None

    async def one(self, sql: str, args: Sequence[Any], seconds: float) -> Any:
        conn = self.conn
        if conn is None or conn.is_closed():
            # No codecs: the lease's statements return text[] and bool, and a
            # reconnect must fit in the safe time left.
            conn = await asyncpg.connect(self.dsn, **self.kwargs)
            self.conn = conn
        # asyncpg's timeout cancels the statement on the server: nothing is set on the session.
        return await conn.fetchval(sql, *args, timeout=max(seconds, 0.001))

    async def drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.terminate()


class _Writes:
    transaction = staticmethod(transaction)
    fenced_update = staticmethod(fenced_update)
    fenced_delete = staticmethod(fenced_delete)
    fenced_upsert = staticmethod(fenced_upsert)
    check = staticmethod(check)


class Lease(AsyncLease):
    """An asyncio lease (pgfencing.aio.AsyncLease) renewed on its own asyncpg
    connection to dsn; other keyword arguments go to asyncpg.connect()
    (statement_cache_size defaults to 0 there: no named prepared statements,
    safe behind PgBouncer in transaction mode). `async with Lease(...) as
    lease:` acquires."""

    def __init__(self, dsn: Optional[str] = None, resource: Resources = "", **kwargs: Any) -> None:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in AsyncLease.OPTIONS}
        settings = dict(kwargs.get("server_settings") or {})
        settings.setdefault("application_name", APPLICATION_NAME)
        kwargs["server_settings"] = settings
        kwargs.setdefault("statement_cache_size", 0)
        super().__init__(_Backend(dsn, kwargs), resource, _Writes, **options)
