"""fencing's typed errors, shared by the psycopg and asyncpg modules.

Catch these base classes to handle either driver. Each driver module defines
subclasses that are also that driver's own error type (psycopg.DatabaseError,
asyncpg.PostgresError) and registers them for SQLSTATE TF001 and TF002 with
the driver, so every error the driver raises for those codes is already one
of them: no wrapping, no "fatal" class, on any connection of the process.
"""
import re
from typing import Any, Dict, List, Optional, Tuple, Type

__all__ = ["FencingError", "StaleTokenError", "TokenRequiredError", "LeaseLostError", "LeaseClosedError",
           "LeaseTakenOverError", "TransactionInProgressError",
           "LeaseNotAcquiredError", "ExtensionTooOldError", "TransactionAbortedError",
           "parse_stale_detail", "translate", "typed_errors"]

STALE_TOKEN = "TF001"
TOKEN_REQUIRED = "TF002"
TAKEN_OVER = "TF003"
ADMIN_SHUTDOWN = "57P01"

# TF001's DETAIL (src/pg/guard/guard.cpp):
#   "<Key ...>: offered token N is below the high-water mark M."
#   "<Key ...>: offered token N is not above the high-water mark M (strict: ...)."
# The key is whatever precedes the fixed tail; the greedy prefix makes the
# match take the tail at the very end, so no key value can imitate it.
_DETAIL = re.compile(
    r"^(?P<key>.*): offered token (?P<offered>\d+) is (?P<how>below|not above) "
    r"the high-water mark (?P<hwm>\d+)(?: \(strict[^)]*\))?\.$",
    re.DOTALL,
)


def parse_stale_detail(detail: Optional[str]) -> Tuple[Optional[str], Optional[int], Optional[int], Optional[bool]]:
    """(key, offered, hwm, strict) from a TF001 DETAIL; Nones when it does not parse."""
    m = _DETAIL.match(detail or "")
    if m is None:
        return None, None, None, None
    return m.group("key"), int(m.group("offered")), int(m.group("hwm")), m.group("how") == "not above"


class FencingError(Exception):
    """Any refusal by fencing or by this library."""


class StaleTokenError(FencingError):
    """A write refused because its token is below the high-water mark (TF001),
    or a fenced_*() call that wrote 0 rows under a higher high-water mark.
    Re-acquire, re-read, then write.

    Fields: schema, table (the error's schema_name/table_name fields), key
    (the DETAIL's key text, e.g. "Key (id)=(5)" or "Resource 'r' (namespace
    'default')"), offered and hwm (ints), strict (bool)."""

    sqlstate = STALE_TOKEN
    _given: Optional[Dict[str, Any]] = None  # fields set by the library for errors it builds itself
    written: Optional[int] = None  # fenced_*(): rows the same call did write

    # Driver subclasses return (detail, schema, table) from the server error.
    def _server_fields(self) -> Tuple[Optional[str], Optional[str], Optional[str]]:
        return None, None, None

    def _field(self, name: str) -> Any:
        if self._given is not None:
            return self._given.get(name)
        detail, schema, table = self._server_fields()
        key, offered, hwm, strict = parse_stale_detail(detail)
        return {"schema": schema, "table": table, "key": key, "offered": offered,
                "hwm": hwm, "strict": strict}[name]

    @property
    def schema(self) -> Optional[str]:
        return self._field("schema")  # type: ignore[no-any-return]

    @property
    def table(self) -> Optional[str]:
        return self._field("table")  # type: ignore[no-any-return]

    @property
    def key(self) -> Optional[str]:
        return self._field("key")  # type: ignore[no-any-return]

    @property
    def offered(self) -> Optional[int]:
        return self._field("offered")  # type: ignore[no-any-return]

    @property
    def hwm(self) -> Optional[int]:
        return self._field("hwm")  # type: ignore[no-any-return]

    @property
    def strict(self) -> Optional[bool]:
        return self._field("strict")  # type: ignore[no-any-return]

    @classmethod
    def _build(cls, message: str, **fields: Any) -> "StaleTokenError":
        err = cls(message)
        err._given = fields
        return err


class TokenRequiredError(FencingError):
    """A table that requires a token was written without one (TF002), or under
    a fencing.token set for the session rather than the transaction."""

    sqlstate = TOKEN_REQUIRED


class LeaseLostError(FencingError):
    """The lease is lost (a renewal was refused, its safe time ran out, or
    another holder took it over): the library refuses to write under its
    token. reason: 'refused', 'expired' or 'takeover'."""

    def __init__(self, message: str, resource: Optional[str] = None, token: Optional[int] = None,
                 resources: Optional[List[str]] = None, tokens: Optional[List[int]] = None,
                 reason: Optional[str] = None) -> None:
        super().__init__(message)
        self.resource, self.token, self.reason = resource, token, reason
        self.resources = resources if resources is not None else ([] if resource is None else [resource])
        self.tokens = tokens if tokens is not None else ([] if token is None else [token])


class LeaseTakenOverError(LeaseLostError):
    """A write under the lease was cut off by a takeover: another holder's
    fencing_acquire ended the backend (SQLSTATE TF003; or 57P01 once the
    lease was already lost, CONTRACT.md section 4a). The write rolled back.
    A LeaseLostError, so `except LeaseLostError` catches it; reason is
    'takeover'; sqlstate the server's code; cause the driver's error."""

    def __init__(self, message: str, resource: Optional[str] = None, token: Optional[int] = None,
                 resources: Optional[List[str]] = None, tokens: Optional[List[int]] = None,
                 sqlstate: Optional[str] = None) -> None:
        super().__init__(message, resource, token, resources, tokens, "takeover")
        self.sqlstate = sqlstate


class LeaseClosedError(FencingError):
    """The lease was released or closed: nothing starts or commits under it
    any more. Not a LeaseLostError: the lease ended by the holder's choice."""

    def __init__(self, message: str, resource: Optional[str] = None, token: Optional[int] = None,
                 resources: Optional[List[str]] = None, tokens: Optional[List[int]] = None) -> None:
        super().__init__(message)
        self.resource, self.token = resource, token
        self.resources = resources if resources is not None else ([] if resource is None else [resource])
        self.tokens = tokens if tokens is not None else ([] if token is None else [token])


class TransactionInProgressError(FencingError):
    """A transaction helper was given a connection that is already inside a
    transaction: the helper never joins, commits or rolls back the caller's
    transaction. Run it on a connection outside one (or SET LOCAL
    fencing.token in your own transaction)."""


class LeaseNotAcquiredError(FencingError, TimeoutError):
    """acquire() did not get the lease: another holder's lease is live and
    the wait (if any) passed."""


class ExtensionTooOldError(FencingError):
    """The installed SQL version of the extension lacks a function this call
    needs (fencing_acquire_all, fencing_check: 1.5). Run ALTER EXTENSION
    fencing UPDATE in the database."""

    hint = "ALTER EXTENSION fencing UPDATE"


class TransactionAbortedError(FencingError):
    """A statement in a transaction() block failed and the block went on
    without re-raising (a caught StaleTokenError, say): the server aborted the
    transaction, so its COMMIT would roll back every write of the block. The
    block is rolled back and this is raised instead of reporting success."""


ABORTED_MESSAGE = ("a statement in the transaction failed and its error was caught inside the "
                   "block: the transaction is aborted and was rolled back, nothing of it committed")


def too_old(function: str, cause: BaseException) -> ExtensionTooOldError:
    err = ExtensionTooOldError(f"{function}() is not installed in this database: the extension's "
                               f"SQL is older than 1.5 (HINT: ALTER EXTENSION fencing UPDATE)")
    err.__cause__ = cause
    return err


def translate(exc: BaseException) -> Optional[FencingError]:
    """fencing's typed error for any driver's or ORM's exception, or None
    when it is not one of fencing's refusals. Follows SQLAlchemy's .orig and
    Django's __cause__ down to the driver error; reads the SQLSTATE
    (.sqlstate: psycopg 3, asyncpg; .pgcode: psycopg2) and the DETAIL,
    schema and table fields (.diag: psycopg 2 and 3; attributes: asyncpg).
    The psycopg 3 and asyncpg modules make this unnecessary for their drivers
    (their errors already are the typed ones); use it for psycopg2 under
    Django or SQLAlchemy."""
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, FencingError):
            return e
        state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
        if state in (STALE_TOKEN, TOKEN_REQUIRED):
            return _typed_from(e, state, exc)
        e = getattr(e, "orig", None) or e.__cause__
    return None


def _typed_from(e: BaseException, state: str, outer: BaseException) -> FencingError:
    diag = getattr(e, "diag", None)

    def field(diag_name: str, attr: str) -> Any:
        return getattr(diag, diag_name, None) or getattr(e, attr, None)
    message = field("message_primary", "message") or str(e)
    err: FencingError
    if state == TOKEN_REQUIRED:
        err = TokenRequiredError(message)
    else:
        key, offered, hwm, strict = parse_stale_detail(field("message_detail", "detail"))
        err = StaleTokenError._build(message, schema=field("schema_name", "schema_name"),
                                     table=field("table_name", "table_name"), key=key,
                                     offered=offered, hwm=hwm, strict=strict)
    err.__cause__ = outer
    return err


class typed_errors:
    """with typed_errors(): ... re-raises fencing's refusals from any driver
    or ORM as StaleTokenError / TokenRequiredError (from the original)."""

    def __enter__(self) -> "typed_errors":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Any) -> None:
        if exc is None or isinstance(exc, FencingError):
            return
        typed = translate(exc)
        if typed is None:
            return
        raise typed from exc
