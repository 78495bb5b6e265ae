"""Typed errors for fencing's refusals, for any Python PostgreSQL driver.
Copy this module next to your code; the examples here (psycopg 3, Django,
SQLAlchemy) share it.

    typed = fencing_error(sqlstate, detail, message)   # None: not fencing's
    if typed is not None:
        raise typed from e

StaleToken (SQLSTATE TF001, or 0 rows from fenced_update()) carries the
offered token and the high-water mark as Python ints; TokenRequired is TF002.
"""
import re
from contextlib import contextmanager


class FencingError(Exception):
    """A write refused by fencing."""

    sqlstate = None


class StaleToken(FencingError):
    """The offered token is below the high-water mark (TF001), or
    fenced_update() wrote 0 rows. The lock was lost: re-acquire, re-read,
    then write."""

    def __init__(self, message, offered, hwm, sqlstate=None):
        super().__init__(message)
        self.offered, self.hwm, self.sqlstate = offered, hwm, sqlstate


class TokenRequired(FencingError):
    """A require_token table was written without a token (TF002)."""

    sqlstate = "TF002"


# TF001's DETAIL: "<key>: offered token T is below the high-water mark H."
# (strict mode: "is not above"). Drivers hand DETAIL over as a field of its
# own (psycopg: diag.message_detail); the two numbers are only inside its
# text, so that field, never the message, is parsed, from its end: no key
# value can fool it.
_DETAIL = re.compile(r"offered token (\d+) is (?:below|not above) the high-water mark (\d+)"
                     r"(?: \(strict[^)]*\))?\.$")


def fencing_error(sqlstate, detail, message):
    """The typed error for a server error's SQLSTATE, DETAIL and message, or
    None when the error is not one of fencing's refusals."""
    if sqlstate == "TF001":
        m = _DETAIL.search(detail or "")
        return StaleToken(message, int(m.group(1)) if m else None, int(m.group(2)) if m else None, "TF001")
    if sqlstate == "TF002":
        return TokenRequired(message)
    return None


@contextmanager
def typed_errors(catch, driver_error=lambda e: e):
    """Within the block, an exception of type catch that is one of fencing's
    refusals is raised again as the typed error. driver_error gets the
    driver's error out of a wrapper (Django: e.__cause__, SQLAlchemy: e.orig).
    Works with psycopg 3 (e.sqlstate) and psycopg2 (e.pgcode)."""
    try:
        yield
    except catch as e:
        pg = driver_error(e)
        sqlstate = getattr(pg, "sqlstate", None) or getattr(pg, "pgcode", None)
        diag = getattr(pg, "diag", None)
        typed = fencing_error(sqlstate, diag and diag.message_detail, diag and diag.message_primary)
        if typed is None:
            raise
        raise typed from e
