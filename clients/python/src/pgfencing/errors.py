"""fencing's typed errors, shared by the psycopg and asyncpg modules.

Catch these base classes to handle either driver. Each driver module defines
subclasses that are also that driver's own error type (psycopg.DatabaseError,
asyncpg.PostgresError) and registers them for SQLSTATE TF001 and TF002 with
the driver, so every error the driver raises for those codes is already one
of them: no wrapping, no "fatal" class, on any connection of the process.
"""
import re

__all__ = ["FencingError", "StaleTokenError", "TokenRequiredError", "LeaseLostError",
           "LeaseNotAcquiredError", "ExtensionTooOldError", "parse_stale_detail"]

STALE_TOKEN = "TF001"
TOKEN_REQUIRED = "TF002"

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


def parse_stale_detail(detail):
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
    _given = None  # fields set by the library for errors it builds itself

    # Driver subclasses return (detail, schema, table) from the server error.
    def _server_fields(self):
        return None, None, None

    def _field(self, name):
        if self._given is not None:
            return self._given.get(name)
        detail, schema, table = self._server_fields()
        key, offered, hwm, strict = parse_stale_detail(detail)
        return {"schema": schema, "table": table, "key": key, "offered": offered,
                "hwm": hwm, "strict": strict}[name]

    schema = property(lambda self: self._field("schema"))
    table = property(lambda self: self._field("table"))
    key = property(lambda self: self._field("key"))
    offered = property(lambda self: self._field("offered"))
    hwm = property(lambda self: self._field("hwm"))
    strict = property(lambda self: self._field("strict"))

    @classmethod
    def _build(cls, message, **fields):
        err = cls(message)
        err._given = fields
        return err


class TokenRequiredError(FencingError):
    """A table that requires a token was written without one (TF002), or under
    a fencing.token set for the session rather than the transaction."""

    sqlstate = TOKEN_REQUIRED


class LeaseLostError(FencingError):
    """The lease is lost (a renewal failed, or its safe time ran out): the
    library refuses to write under its token."""

    def __init__(self, message, resource=None, token=None):
        super().__init__(message)
        self.resource, self.token = resource, token


class LeaseNotAcquiredError(FencingError, TimeoutError):
    """acquire() did not get the lease: another holder's lease is live and
    the wait (if any) passed."""


class ExtensionTooOldError(FencingError):
    """The installed SQL version of the extension lacks a function this call
    needs (fencing_acquire_all, fencing_check: 1.5). Run ALTER EXTENSION
    fencing UPDATE in the database."""

    hint = "ALTER EXTENSION fencing UPDATE"


def too_old(function, cause):
    err = ExtensionTooOldError(f"{function}() is not installed in this database: the extension's "
                               f"SQL is older than 1.5 (HINT: ALTER EXTENSION fencing UPDATE)")
    err.__cause__ = cause
    return err
