"""Takeover (clients/CONTRACT.md section 4a): a write under a lease cut off
by another holder's acquire. Called by run_tests.py with its helpers; the
suite's cluster does not preload the library, so the server sends 57P01
(TF003 is checked on the classification, and by the conformance suite)."""
import threading
import time

import psycopg

import pgfencing
import pgfencing.psycopg as fp


def run_all(h, run):
    for test in (classification, cut_off_after_lost, terminated_while_held):
        try:
            test(h, run)
        except Exception:
            h.crashed(f"takeover: {test.__name__}")


def _resource_table(h, name, resource):
    with h.admin() as c:
        c.execute(f"DROP TABLE IF EXISTS {name}")
        c.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, res text NOT NULL, v text, fence fencing_token)")
        c.execute("SELECT fencing_protect(%s, scope => 'resource', resource_column => 'res')", (name,))
        with fp.transaction(c, 1):
            c.execute(f"INSERT INTO {name} VALUES (1, %s, 'a')", (resource,))


def _writing(h, resource, table):
    """A held lease on resource, and its write to table sleeping in the
    server: (lease, the write's thread, the list its error goes to)."""
    _resource_table(h, table, resource)
    lease = fp.Lease("", resource, ttl=3)
    lease.acquire()
    out = []
    return lease, _write_sleeping(lease, table, 10, out), out


def _write_sleeping(lease, name, seconds, out):
    """A write under the lease that sleeps in the server after its UPDATE."""
    def body():
        try:
            with fp.connect("", autocommit=True) as app, lease.transaction(app) as tx:
                tx.execute(f"UPDATE {name} SET v = 'cut-off' WHERE id = 1")
                tx.execute("SELECT pg_sleep(%s)", (seconds,))
        except Exception as e:
            out.append(e)
    t = threading.Thread(target=body)
    t.start()
    with fp.connect("", autocommit=True) as c:
        end = time.monotonic() + 5
        while time.monotonic() < end and not c.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%%'"
                " AND state = 'active'").fetchone()[0]:
            time.sleep(0.02)
    return t


class _Coded(Exception):
    """A driver error with a SQLSTATE (what the classification reads)."""

    def __init__(self, code):
        super().__init__(code)
        self.sqlstate = code


def classification(h, run):
    """TF003 declares the lease lost (reason takeover) and is a
    LeaseTakenOverError, a LeaseLostError; 57P01 on a held lease is not a
    takeover; psycopg's ended connection with the extension's TF003 text is."""
    lease = fp.Lease("", f"tk-class-{run}", ttl=5)
    lease.acquire()
    plain = lease.taken_over(_Coded("57P01"))
    held = lease.state
    text = lease.taken_over(psycopg.OperationalError(
        "consuming input failed: terminating connection: the lease of resource 'r' (namespace 'n') was taken over"),
        True)
    h.report(plain is None and held == "held" and isinstance(text, pgfencing.LeaseTakenOverError)
             and isinstance(text, pgfencing.LeaseLostError) and text.reason == "takeover"
             and lease.lost_reason_kind == "takeover",
             "takeover: 57P01 on a held lease is not a takeover; TF003 (here psycopg's ended connection "
             "with its text) is LeaseTakenOverError and loses the lease with reason takeover",
             (plain, held, repr(text), lease.lost_reason_kind))
    lease.close()


def cut_off_after_lost(h, run):
    """The lease is released behind the holder's back; once a renewal saw
    it (lost, refused), another holder's acquire ends the write (57P01):
    LeaseTakenOverError, the lease's reason stays refused, nothing commits."""
    resource, table = f"tk-lost-{run}", "tk_lost"
    lease, t, out = _writing(h, resource, table)
    with h.admin() as c:
        c.execute("SELECT fencing_release(%s, %s::text::fencing_token)", (resource, str(lease.token)))
        lost = lease.lost_event.wait(3)
        tok2 = c.execute("SELECT fencing_acquire(%s, 'other', '30 s', '5 s')", (resource,)).fetchone()[0]
    t.join(10)
    err = out[0] if out else None
    h.report(lost and tok2 is not None and isinstance(err, pgfencing.LeaseTakenOverError)
             and err.reason == "takeover" and lease.lost_reason_kind == "refused" and h.row(table, 1)[0] == "a",
             "takeover: a write ended (57P01) after the lease was lost raises LeaseTakenOverError "
             "(a LeaseLostError); the lost reason stays refused; the write rolled back",
             (lost, tok2, repr(err), lease.lost_reason_kind, h.row(table, 1)))
    lease.close()


def terminated_while_held(h, run):
    """pg_terminate_backend (57P01, as a shutdown) of a held lease's write:
    the driver's error, the lease still held."""
    lease, t, out = _writing(h, f"tk-held-{run}", "tk_held")
    with h.admin() as c:
        c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%%'"
                  " AND state = 'active'")
    t.join(10)
    time.sleep(1.5)
    err = out[0] if out else None
    h.report(isinstance(err, psycopg.Error) and not isinstance(err, pgfencing.FencingError)
             and lease.state == "held",
             "takeover: a held lease's write ended by pg_terminate_backend is the driver's error, "
             "not a takeover; the lease stays held", (repr(err), lease.state))
    lease.close()
