"""The library's lease path behind a PgBouncer in transaction pooling, with
psycopg's defaults (test.sh runs it behind Debian 12's 1.18 and Debian 13's
1.24): acquire, renewals past several TTLs, a write by the transaction helper,
a stale write refused as StaleTokenError with its fields, a takeover (the
server's TF003 when the library is preloaded, else 57P01) raised as
LeaseTakenOverError, and no session state left on the server connections.

    pooler_lease.py POOLED_CONNINFO DIRECT_CONNINFO LABEL
Prints TAP lines (numbered from TAP_OFFSET)."""
import os
import sys
import threading
import time

import psycopg

import pgfencing
import pgfencing.psycopg as fp

POOLED, DIRECT, LABEL = sys.argv[1], sys.argv[2], sys.argv[3]
n = int(os.environ.get("TAP_OFFSET", "0"))
failed = 0
RUN = str(os.getpid())


def report(ok, what, got=None):
    global n, failed
    n += 1
    failed += 0 if ok else 1
    print(f"{'ok' if ok else 'not ok'} {n} - {LABEL}: {what}" + ("" if ok else f"  # got {got!r}"), flush=True)


admin = psycopg.connect(DIRECT, autocommit=True)
PRELOADED = "fencing" in admin.execute("SHOW shared_preload_libraries").fetchone()[0]
admin.execute("DROP TABLE IF EXISTS pl_rows")
admin.execute("CREATE TABLE pl_rows (id int PRIMARY KEY, res text NOT NULL, v text, fence fencing_token)")
admin.execute("SELECT fencing_protect('pl_rows', scope => 'resource', resource_column => 'res')")
with fp.transaction(admin, 1):
    admin.execute("INSERT INTO pl_rows VALUES (1, %s, 'a'), (2, %s, 'a')", (f"pl-a-{RUN}", f"pl-t-{RUN}"))


def value(i):
    return admin.execute("SELECT v FROM pl_rows WHERE id = %s", (i,)).fetchone()[0]


# acquire, renewals past 4 TTLs, the transaction helper's write
lease = fp.Lease(POOLED, f"pl-a-{RUN}", ttl=1.5)
token = lease.acquire()
report(token > 0 and lease.state == "held", "acquire through the pooler", (token, lease.state))
time.sleep(6)
report(lease.state == "held" and not lease.lost_event.is_set(), "renewals through the pooler keep the lease past 4 TTLs",
       (lease.state, lease.lost_reason_kind))
with fp.connect(POOLED, autocommit=True) as app:
    with lease.transaction(app) as tx:
        tx.execute("UPDATE pl_rows SET v = 'helper' WHERE id = 1")
    report(value(1) == "helper", "lease.transaction() writes through the pooler", value(1))
    # another holder raised the resource's HWM: this lease's write is stale
    with fp.transaction(admin, token + 1000):
        admin.execute("UPDATE pl_rows SET v = 'newer' WHERE id = 1")
    err = None
    try:
        with lease.transaction(app) as tx:
            tx.execute("UPDATE pl_rows SET v = 'stale' WHERE id = 1")
    except pgfencing.StaleTokenError as e:
        err = e
    report(err is not None and err.offered == token and err.hwm == token + 1000 and err.table == "pl_rows"
           and value(1) == "newer", "a stale write through the pooler: StaleTokenError with offered, hwm and table",
           (repr(err), value(1)))
lease.close()

# takeover: the lease released behind the holder's back, another acquire ends its write
lease = fp.Lease(POOLED, f"pl-t-{RUN}", ttl=3)
lease.acquire()
out = []


def write():
    try:
        with fp.connect(POOLED, autocommit=True) as app, lease.transaction(app) as tx:
            tx.execute("UPDATE pl_rows SET v = 'cut-off' WHERE id = 2")
            tx.execute("SELECT pg_sleep(10)")
    except Exception as e:
        out.append(e)


t = threading.Thread(target=write)
t.start()
end = time.monotonic() + 10
while time.monotonic() < end and not admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND state = 'active'").fetchone()[0]:
    time.sleep(0.05)
admin.execute("SELECT fencing_release(%s, %s::text::fencing_token)", (f"pl-t-{RUN}", str(lease.token)))
lost = lease.lost_event.wait(5)
admin.execute("SELECT fencing_acquire(%s, 'other', '30 s', '5 s')", (f"pl-t-{RUN}",))
t.join(15)
err = out[0] if out else None
cause = getattr(err, "__cause__", None)
said = f"{getattr(cause, 'sqlstate', None)} {cause}"
expect = "was taken over" if PRELOADED else "57P01"
report(lost and isinstance(err, pgfencing.LeaseTakenOverError) and value(2) == "a"
       and (expect in said if PRELOADED else True),
       f"a takeover through the pooler ({'preloaded: TF003' if PRELOADED else 'not preloaded: 57P01'}) "
       "is LeaseTakenOverError; the write rolled back", (lost, repr(err), said, value(2)))
lease.close()

# no session state on the server connections the pool hands out
with psycopg.connect(POOLED, autocommit=True, prepare_threshold=None) as c:
    seen = set()
    for _ in range(6):
        row = c.execute("SELECT current_setting('statement_timeout'), coalesce(current_setting('fencing.token', true), ''),"
                        " (SELECT count(*) FROM pg_prepared_statements WHERE name NOT LIKE 'PGBOUNCER%%')"
                        " FROM pg_sleep(0)").fetchone()
        seen.add(row)
report(seen == {("0", "", 0)}, "no statement_timeout, fencing.token or client prepared statement left on the "
       "server connections", seen)
admin.execute("DROP TABLE pl_rows")
admin.close()
print(f"# {LABEL}: {failed} failed")
sys.exit(1 if failed else 0)
