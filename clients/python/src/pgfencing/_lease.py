"""The lease's timing, shared by the thread (psycopg) and asyncio (psycopg,
asyncpg) leases.

A lease is safe to write under until `deadline`: the moment its last
successful acquire or renew was *sent*, plus the TTL, minus a safety margin.
Measured from the send on the client's monotonic clock, the deadline is never
later than the server's expiry (clock_timestamp() at the server is later
than the send), so the lost signal fires before the TTL runs out there, and a
process that was paused (SIGSTOP, a GC pause, a VM freeze) finds its deadline
passed the moment it runs again, before any renewal thread gets to run.
"""
import os
import random
import socket
import threading
import time
import uuid

from .errors import LeaseLostError

monotonic = time.monotonic


# The lease connections' application_name, unless the caller sets one: they
# are easy to tell apart in pg_stat_activity.
APPLICATION_NAME = "pgfencing-lease"


def default_holder():
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaseTiming:
    """Deadline bookkeeping and the lost state; no I/O. The lost state is
    sticky: once lost, a lease stays lost (acquire again for a new token)."""

    def __init__(self, ttl, renew_every=None, jitter=0.2, margin=None):
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
        self.deadline = None
        self.lost_reason = None
        self._lock = threading.Lock()

    def confirmed(self, sent_at):
        """A successful acquire/renew sent at sent_at (monotonic)."""
        with self._lock:
            if self.lost_reason is None:
                self.deadline = sent_at + self.ttl - self.margin

    def next_sleep(self):
        """Seconds to the next renewal: renew_every with +-jitter, never past
        the deadline."""
        delay = self.renew_every * random.uniform(1 - self.jitter, 1 + self.jitter)
        return max(0.0, min(delay, self.remaining()))

    def retry_sleep(self):
        """Seconds to the retry after a failed renewal (a broken connection):
        soon, so that a reconnect still lands within the safe time."""
        return max(0.0, min(self.renew_every / 8 * random.uniform(1 - self.jitter, 1 + self.jitter),
                            self.remaining()))

    def remaining(self):
        return 0.0 if self.deadline is None else self.deadline - monotonic()

    def mark_lost(self, reason):
        """Returns True the first time (the caller fires the signal)."""
        with self._lock:
            if self.lost_reason is not None:
                return False
            self.lost_reason = reason
            return True

    def check_expired(self):
        """Marks the lease lost when its deadline passed; True if it did now."""
        if self.deadline is not None and self.lost_reason is None and monotonic() >= self.deadline:
            return self.mark_lost("the lease's safe time ran out before a renewal succeeded")
        return False


class LeaseBase:
    """State and checks common to the sync and async leases."""

    def __init__(self, resource, holder, ttl, namespace, renew_every, jitter, margin, on_lost):
        self.resource = resource
        self.holder = holder or default_holder()
        self.namespace = namespace
        self.on_lost = on_lost
        self._timing = LeaseTiming(ttl, renew_every, jitter, margin)
        self.token = None
        self.released = False

    @property
    def ttl(self):
        return self._timing.ttl

    @property
    def lost(self):
        """True once the lease is lost: a renewal was refused, or the safe
        time ran out (checked on every read, so a paused process sees it at
        once), or the lease was released."""
        if self._timing.check_expired():
            self._fire_lost()
        return self._timing.lost_reason is not None

    @property
    def lost_reason(self):
        return self._timing.lost_reason

    @property
    def remaining(self):
        """Seconds of safe time left (0 when lost)."""
        return 0.0 if self.lost else max(0.0, self._timing.remaining())

    def require_live(self):
        """The token, or LeaseLostError."""
        if self.token is None:
            raise LeaseLostError(f"lease on {self.resource!r} is not acquired", self.resource)
        if self.lost:
            raise LeaseLostError(f"lease on {self.resource!r} (token {self.token}) is lost: "
                                 f"{self.lost_reason}", self.resource, self.token)
        return self.token

    def _lose(self, reason):
        if self._timing.mark_lost(reason):
            self._fire_lost()

    def _sql_args(self):
        return self.resource, self.token, f"{self._timing.ttl} seconds", self.namespace
