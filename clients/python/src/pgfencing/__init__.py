"""pgfencing: the Python client of the fencing PostgreSQL extension.

Driver modules (import the one you use; each imports its driver):
    pgfencing.psycopg   psycopg 3: Lease (thread), AsyncLease (asyncio), codecs
    pgfencing.asyncpg   asyncpg: Lease (asyncio), codecs

The typed errors below are the base classes of both drivers' errors.
"""
from .errors import (ExtensionTooOldError, FencingError, LeaseClosedError, LeaseLostError,
                     LeaseNotAcquiredError, LeaseTakenOverError, TransactionInProgressError,
                     StaleTokenError, TokenRequiredError, TransactionAbortedError,
                     parse_stale_detail, translate, typed_errors)

__version__ = "1.6.0"
MAX_TOKEN = 9223372036854775807

__all__ = ["FencingError", "StaleTokenError", "TokenRequiredError", "LeaseLostError", "LeaseClosedError",
           "LeaseTakenOverError", "TransactionInProgressError",
           "LeaseNotAcquiredError", "ExtensionTooOldError", "TransactionAbortedError",
           "parse_stale_detail", "translate", "typed_errors", "MAX_TOKEN", "__version__"]
