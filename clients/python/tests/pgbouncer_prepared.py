"""Behind PgBouncer < 1.21 in transaction pooling, a named prepared statement
of one client can run on another client's server connection where that name
means another statement: X's protected-table UPDATE runs with Y's parameters
and writes a token nobody was issued (docs/poolers.md). This test shows the
hazard with psycopg's named statements (prepare_threshold=0), and that
connections from pgfencing.psycopg.connect() (prepare_threshold=None by
default) do not have it.

    pgbouncer_prepared.py PGBOUNCER_PORT DIRECT_CONNINFO [tracks-prepared]
PgBouncer must serve two databases, `pgb_named` and `pgb_lib` (each its own
pool of 2 server connections, so the two runs start from clean server
connections), both to the database of DIRECT_CONNINFO, in transaction
pooling. Prints TAP lines (numbered from TAP_OFFSET)."""
import os
import sys

import psycopg

import pgfencing.psycopg as fp

PORT, DIRECT = sys.argv[1], sys.argv[2]
# PgBouncer >= 1.21 with max_prepared_statements > 0 tracks named statements:
# there the driver's defaults must be safe too.
TRACKS = len(sys.argv) > 3 and sys.argv[3] == "tracks-prepared"
POOLED = ""  # the pool of the current run
n = int(os.environ.get("TAP_OFFSET", "0"))
failed = 0


def report(ok, what, got=None):
    global n, failed
    n += 1
    failed += 0 if ok else 1
    print(f"{'ok' if ok else 'not ok'} {n} - {what}" + ("" if ok or got is None else f"  # got {got!r}"), flush=True)


def pid(c):
    return c.execute("SELECT pg_backend_pid()", prepare=False).fetchone()[0]


def hold_other_than(target):
    """Open transactions until one holds the server connection `target`."""
    held = []
    for _ in range(2):
        h = psycopg.connect(POOLED, prepare_threshold=None)  # not autocommit: keeps its server connection
        p = pid(h)
        if p == target:
            for o in held:
                o.rollback()
                o.close()
            return h
        held.append(h)
    raise SystemExit(f"could not pin server connection {target}")


def run(dbname, make):
    """Y prepares an UPDATE of an unprotected table on server connection Sa;
    X prepares an UPDATE of the protected table on Sb; Y's next execute lands
    on Sb. Returns the protected row's token afterwards."""
    global POOLED
    POOLED = f"host=127.0.0.1 port={PORT} user=postgres dbname={dbname}"
    admin = psycopg.connect(DIRECT, autocommit=True)
    admin.execute("DROP TABLE IF EXISTS pgb_p, pgb_s")
    admin.execute("CREATE TABLE pgb_p (id int PRIMARY KEY, v text, fence fencing_token)")
    admin.execute("CREATE TABLE pgb_s (id int PRIMARY KEY, qty text, note text)")
    with fp.transaction(admin, 100):
        admin.execute("INSERT INTO pgb_p VALUES (1, 'init')")
    admin.execute("INSERT INTO pgb_s VALUES (1, '0', '')")
    y, x = make(POOLED), make(POOLED)
    with y.transaction():  # six runs: psycopg's default prepare_threshold (5) prepares it too
        for _ in range(6):
            y.execute("UPDATE pgb_s SET qty = %s, note = %s WHERE id = 1", ("1", "y-first"))
        sa = pid(y)
    h = hold_other_than(sa)
    with x.transaction():
        for _ in range(6):
            x.execute("UPDATE pgb_p SET fence = %s, v = %s WHERE id = 1", ("1000", "x-legit"))
    h.rollback()
    h.close()
    h = hold_other_than(sa)
    try:
        with y.transaction():
            y.execute("UPDATE pgb_s SET qty = %s, note = %s WHERE id = 1", ("5000000", "y-second"))
    except psycopg.Error:
        pass
    h.rollback()
    h.close()
    token = admin.execute("SELECT fence::int8 FROM pgb_p WHERE id = 1").fetchone()[0]
    for c in (x, y):
        c.close()
    admin.close()
    return token


named = run("pgb_named", lambda dsn: psycopg.connect(dsn, autocommit=True))
if TRACKS:
    report(named == 1000,
           "PgBouncer >= 1.21 with max_prepared_statements: psycopg's default prepared statements "
           "keep each client's own statement (the protected row keeps X's token 1000)", named)
else:
    report(named == 5000000,
           "PgBouncer < 1.21: with psycopg's default prepared statements, client Y's parameters ran "
           "client X's statement (the protected row got token 5000000, issued to nobody): the hazard "
           "is real here", named)
library = run("pgb_lib", lambda dsn: fp.connect(dsn, autocommit=True))
report(library == 1000,
       f"PgBouncer{' >= 1.21' if TRACKS else ' < 1.21'}: pgfencing.psycopg.connect() (prepare_threshold=None by default) keeps each "
       "client's own statement: the protected row keeps X's token 1000", library)
print(f"# pgbouncer: {failed} failed")
sys.exit(1 if failed else 0)
