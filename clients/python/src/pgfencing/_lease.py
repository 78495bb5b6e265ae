"""The lease's timing and state, shared by the thread (psycopg) and asyncio
(psycopg, asyncpg) leases: clients/CONTRACT.md.

A lease is safe to write under until `deadline`: the send time of the call
that last set its expiry on the server (the acquire, or a renewal), plus the
TTL, minus a safety margin. Measured from the send on the client's monotonic
clock, the deadline is never later than the server's expiry, and a process
that was paused (SIGSTOP, a GC pause, a VM freeze) finds its deadline passed
the moment it runs again, before any renewal thread gets to run.

After a waited (or slow) acquire the grant happened at an unknown moment
after the send: the lease renews once at once and counts from that renewal's
send time, so a lease the server granted a full TTL is never declared lost
early.
"""
import os
import random
import socket
import threading
import time
import uuid
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from ._sql import interval
from .errors import ADMIN_SHUTDOWN, TAKEN_OVER, LeaseClosedError, LeaseLostError, LeaseTakenOverError

monotonic = time.monotonic

# The lease connections' application_name, unless the caller sets one: they
# are easy to tell apart in pg_stat_activity.
APPLICATION_NAME = "pgfencing-lease"

EXPIRED = "expired"
REFUSED = "refused"
TAKEOVER = "takeover"
# The extension's TF003 message (src/pg/api/takeover.cpp; not translated).
TAKEN_OVER_TEXT = ") was taken over"
_REASONS = {EXPIRED: "the lease's safe time ran out before a renewal succeeded",
            REFUSED: "renewal refused: the lease expired or another holder took it",
            TAKEOVER: "another holder's acquire took the lease over and ended a write under its token"}

# One statement renews (releases) every resource of a lease.
# ($n in order of appearance: the psycopg module maps them to %s.)
RENEW_ALL = ("SELECT pg_catalog.bool_and(fencing_renew(u.r, u.t::int8, a.ttl, a.ns))"
             " FROM (SELECT $1::text[] AS rs, $2::text[] AS ts, $3::text::interval AS ttl, $4::text AS ns) a,"
             " ROWS FROM (pg_catalog.unnest(a.rs), pg_catalog.unnest(a.ts)) AS u(r, t)")
RELEASE_ALL = ("SELECT pg_catalog.bool_and(fencing_release(u.r, u.t::int8, a.ns))"
               " FROM (SELECT $1::text[] AS rs, $2::text[] AS ts, $3::text AS ns) a,"
               " ROWS FROM (pg_catalog.unnest(a.rs), pg_catalog.unnest(a.ts)) AS u(r, t)")
# Tokens travel as text[] (asyncpg introspects int8[], which costs a second
# on a server with JIT: too slow for a reconnect within the safe time).
ACQUIRE_ONE = ("SELECT ARRAY[fencing_acquire($1, $2, $3::text::interval, $4::text::interval, $5)::int8]"
               "::pg_catalog.text[]")
ACQUIRE_MANY = ("SELECT fencing_acquire_all($1::text[], $2, $3::text::interval, $4::text::interval, $5)"
                "::pg_catalog.int8[]::pg_catalog.text[]")

Resources = Union[str, Sequence[str]]


def default_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaseTiming:
    """Deadline bookkeeping and the state; no I/O. Lost and closed are
    sticky: a lease object is acquired once."""

    def __init__(self, ttl: float, renew_every: Optional[float] = None, jitter: float = 0.2,
                 margin: Optional[float] = None) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.ttl = float(ttl)
        self.renew_every = float(renew_every) if renew_every else self.ttl / 3
        self.margin = float(margin) if margin is not None else max(self.ttl / 5, 0.05)
        if not 0 <= jitter < 1:
            raise ValueError("jitter must be in [0, 1)")
        if self.margin >= self.ttl or self.renew_every >= self.ttl - self.margin:
            raise ValueError("renew_every and margin must leave time to renew before the TTL ends")
        self.jitter = jitter
        self.deadline: Optional[float] = None
        self.lost_kind: Optional[str] = None
        self.closed = False
        self._lock = threading.Lock()

    def confirmed(self, sent_at: float) -> None:
        """A successful acquire/renew sent at sent_at (monotonic)."""
        with self._lock:
            if self.lost_kind is None and not self.closed:
                self.deadline = sent_at + self.ttl - self.margin

    def next_sleep(self) -> float:
        """Seconds to the next renewal: renew_every with +-jitter, never past
        the deadline."""
        delay = self.renew_every * random.uniform(1 - self.jitter, 1 + self.jitter)
        return max(0.0, min(delay, self.remaining()))

    def retry_sleep(self) -> float:
        """Seconds to the retry after a failed renewal (a broken connection):
        soon, so that a reconnect still lands within the safe time."""
        return max(0.0, min(self.renew_every / 8 * random.uniform(1 - self.jitter, 1 + self.jitter),
                            self.remaining()))

    def remaining(self) -> float:
        return 0.0 if self.deadline is None else self.deadline - monotonic()

    def mark_lost(self, kind: str) -> bool:
        """True the first time, for a lease not closed (the caller fires the signal)."""
        with self._lock:
            if self.lost_kind is not None or self.closed or self.deadline is None:
                return False
            self.lost_kind = kind
            return True

    def mark_closed(self) -> bool:
        """True the first time."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
            return True

    def check_expired(self) -> bool:
        """Marks the lease lost when its deadline passed; True if it did now."""
        if (self.deadline is not None and self.lost_kind is None and not self.closed
                and monotonic() >= self.deadline):
            return self.mark_lost(EXPIRED)
        return False


class LeaseBase:
    """State and checks common to the sync and async leases. `resource` is
    one name or a sequence of names (a lease on all of them, acquired all or
    none by fencing_acquire_all and renewed together)."""

    def __init__(self, resource: Resources, holder: Optional[str], ttl: float, namespace: str,
                 renew_every: Optional[float], jitter: float, margin: Optional[float],
                 on_lost: Optional[Callable[..., object]], wait: Optional[float]) -> None:
        if isinstance(resource, str):
            self.resources: List[str] = [resource]
            self._many = False
        else:
            self.resources = [str(r) for r in resource]
            if not self.resources:
                raise ValueError("a lease needs at least one resource")
            self._many = True
        self.resource = self.resources[0]
        self.holder = holder or default_holder()
        self.namespace = namespace
        self.on_lost = on_lost
        self.wait = wait
        self._timing = LeaseTiming(ttl, renew_every, jitter, margin)
        self.tokens: Optional[List[int]] = None

    @property
    def token(self) -> Optional[int]:
        """The (first resource's) token; None before acquire()."""
        return None if self.tokens is None else self.tokens[0]

    def token_for(self, resource: Optional[str] = None) -> int:
        if self.tokens is None:
            raise RuntimeError(f"lease on {self._names()} is not acquired")
        if resource is None:
            return self.tokens[0]
        try:
            return self.tokens[self.resources.index(resource)]
        except ValueError:
            raise KeyError(f"the lease holds no resource {resource!r}") from None

    @property
    def ttl(self) -> float:
        return self._timing.ttl

    @property
    def margin(self) -> float:
        return self._timing.margin

    @property
    def lost(self) -> bool:
        """True once the lease was declared lost: a renewal was refused, or
        the safe time ran out (checked on every read, so a paused process
        sees it at once). Not set by release/close (see closed); stays True
        after a later close."""
        if self._timing.check_expired():
            self._fire_lost()
        return self._timing.lost_kind is not None

    @property
    def closed(self) -> bool:
        """True after release() or close()."""
        return self._timing.closed

    @property
    def released(self) -> bool:  # the 1.5 name
        return self._timing.closed

    @property
    def state(self) -> str:
        """'new', 'held', 'lost' or 'closed' (closed wins over lost)."""
        lost = self.lost
        if self._timing.closed:
            return "closed"
        if lost:
            return "lost"
        return "new" if self.tokens is None else "held"

    @property
    def lost_reason_kind(self) -> Optional[str]:
        """'refused', 'expired', 'takeover' or None."""
        return self._timing.lost_kind

    @property
    def lost_reason(self) -> Optional[str]:
        k = self._timing.lost_kind
        return None if k is None else _REASONS[k]

    @property
    def remaining(self) -> float:
        """Seconds of safe time left (0 when lost or closed)."""
        return 0.0 if self.state != "held" else max(0.0, self._timing.remaining())

    def require_live(self, resource: Optional[str] = None) -> int:
        """The token, or LeaseClosedError / LeaseLostError."""
        state = self.state
        if state == "new":
            raise RuntimeError(f"lease on {self._names()} is not acquired")
        if state == "closed":
            raise LeaseClosedError(f"lease on {self._names()} (token {self.token}) was released",
                                   self.resource, self.token, self.resources, self.tokens)
        if state == "lost":
            raise self.lost_error()
        return self.token_for(resource)

    def lost_error(self) -> LeaseLostError:
        return LeaseLostError(f"lease on {self._names()} (token {self.token}) is lost: {self.lost_reason}",
                              self.resource, self.token, self.resources, self.tokens,
                              self._timing.lost_kind)

    def taken_over(self, exc: BaseException, ended: bool = False) -> Optional[LeaseTakenOverError]:
        """The takeover error for a driver error that ended a write under
        this lease (CONTRACT.md section 4a), else None. TF003: the server
        says so; the lease is declared lost (reason takeover) unless it
        already was. 57P01 is a takeover only when the lease is already lost
        (deadline checked first): on a held lease it is a plain shutdown or
        pg_terminate_backend(), and the lease stays held. `ended`: the
        connection is broken and the driver lost the FATAL's SQLSTATE
        (psycopg 3.1 when the server closes the connection mid-query): the
        extension's untranslated TF003 text, else counted as 57P01."""
        code = getattr(exc, "sqlstate", None)
        if code is None and ended:
            code = TAKEN_OVER if TAKEN_OVER_TEXT in str(exc) else ADMIN_SHUTDOWN
        if code == TAKEN_OVER:
            self._lose(TAKEOVER)
        elif code != ADMIN_SHUTDOWN or not self.lost:
            return None
        return LeaseTakenOverError(f"lease on {self._names()} (token {self.token}) was taken over: the server "
                                   f"ended the write ({code})", self.resource, self.token, self.resources,
                                   self.tokens, code)

    def _names(self) -> str:
        return ", ".join(repr(r) for r in self.resources)

    def _lose(self, kind: str) -> None:
        if self._timing.mark_lost(kind):
            self._fire_lost()

    def _fire_lost(self) -> None:  # overridden
        pass

    def _check_acquirable(self) -> bool:
        """True when already held (acquire() returns the token); raises for
        a closed or lost lease object."""
        state = self.state
        if state == "held":
            return True
        if state != "new":
            raise RuntimeError(f"lease on {self._names()} is {state}: build a new Lease to acquire again")
        return False

    # -- the statements, as (sql, args)
    def _acquire_sql(self, wait: Optional[float]) -> Tuple[str, Tuple[Any, ...]]:
        names: object = self.resources if self._many else self.resource
        return (ACQUIRE_MANY if self._many else ACQUIRE_ONE,
                (names, self.holder, interval(self.ttl), interval(wait), self.namespace))

    def _renew_sql(self) -> Tuple[str, Tuple[Any, ...]]:
        return RENEW_ALL, (self.resources, self._token_texts(), interval(self.ttl), self.namespace)

    def _release_sql(self) -> Tuple[str, Tuple[Any, ...]]:
        return RELEASE_ALL, (self.resources, self._token_texts(), self.namespace)

    def _token_texts(self) -> List[str]:
        return [str(t) for t in self.tokens or ()]

    def _needs_renew_at_once(self, wait: Optional[float], sent: float) -> bool:
        """A waited or slow acquire: the grant came at an unknown moment after
        the send, so renew at once and count from the renewal's send."""
        return bool(wait) or monotonic() - sent > self._timing.margin / 2

    def _release_bound(self) -> float:
        return max(self.ttl / 3, 1.0)
