#!/usr/bin/python3
"""Online rewrites under raisers: pg_repack (whole database, by table, only
indexes, one index), VACUUM FULL and CLUSTER of the extension's tables and of
protected user tables, while raisers write in every scope and a leaser keeps
acquiring tokens.

Raisers. Each worker writes, in one READ COMMITTED transaction carrying its
token (SET LOCAL fencing.token), to one key: a resource (table rs, resource
scope, two shards), the table-scope table tt, or a row of the row-scope table
rw (an UPDATE, or a DELETE and re-insert of the key, which leaves a
tombstone). Tokens come from a shared clock with jitter, so some are stale.
Every transaction holds for a few milliseconds, so that pg_repack's copy of
each table overlaps writes in flight and waits for them.

Commit order. An accepted write's transaction increments, as its last
statement, the counter row of its key (UPDATE ctr SET n = n + 1 ... RETURNING
n) and records (key, n, token) in the history table in the same transaction:
the counter row's lock orders a key's commits exactly, and a rolled-back
transaction leaves neither (test/keymove/stress.py does the same).

The leaser acquires and releases a lease of resource job (fencing_acquire
raises that resource's HWM in the same transaction) and records each token.

After each rewrite: a stale probe per key, with the highest token committed
so far minus one, must be refused (TF001). At the end, per key: tokens never
decrease in commit order; the HWM equals the largest committed token; lease
tokens strictly increase in commit order; every error was an expected
refusal; every rewrite succeeded.

Environment: the libpq variables; REPACK_WORKERS (default 6), REPACK_SEED;
REPACK_ROUNDS (default 1: each rewrite once; N runs the list N times);
REPACK_REWRITES: "pg_repack" (default: pg_repack, VACUUM FULL, CLUSTER) or
"repack" (PostgreSQL 19's REPACK, plain, USING INDEX and CONCURRENTLY, of
every fencing table and of the protected user tables).
Prints "ok N - ..." lines; exits non-zero on a failure.
"""
import os
import random
import subprocess
import sys
import threading
import time

import psycopg

WORKERS = int(os.environ.get("REPACK_WORKERS", "6"))
SEED = int(os.environ.get("REPACK_SEED", str(int(time.time()))))
random.seed(SEED)

# Every key a raiser writes: (name, probe statement, HWM query).
KEYS = {
    "res:a": ("UPDATE rs SET v = v + 1 WHERE id = 1", "SELECT fencing_resource_high_water('a')"),
    "res:b": ("UPDATE rs SET v = v + 1 WHERE id = 2", "SELECT fencing_resource_high_water('b')"),
    "tab": ("UPDATE tt SET v = v + 1 WHERE id = 1", "SELECT fencing_high_water('tt')"),
    "row:41": ("UPDATE rw SET v = v + 1 WHERE id = 41",
               "SELECT fencing_high_water('rw', '{\"id\": 41}')"),
    "row:42": ("UPDATE rw SET v = v + 1 WHERE id = 42",
               "SELECT fencing_high_water('rw', '{\"id\": 42}')"),
}
# The rewrites, in order; each is a command line or an SQL statement.
DB = os.environ["PGDATABASE"]
FENCING_TABLES = ["fencing.resource_hwm", "fencing.table_hwm", "fencing.row_tombstone",
                  "fencing.lease", "fencing.protected", "fencing.resource_namespace"]
REWRITES = [
    ("pg_repack -d (whole database) run 1", ["pg_repack", "-d", DB]),
    ("pg_repack -d (whole database) run 2", ["pg_repack", "-d", DB]),
    ("pg_repack -d (whole database) run 3", ["pg_repack", "-d", DB]),
    ("pg_repack -d (whole database) run 4", ["pg_repack", "-d", DB]),
    ("pg_repack -t of every fencing table",
     ["pg_repack", "-d", DB] + [a for t in FENCING_TABLES for a in ("-t", t)]),
    ("pg_repack -t of the protected user tables (row, resource, table scope)",
     ["pg_repack", "-d", DB, "-t", "rw", "-t", "rs", "-t", "tt"]),
    ("pg_repack -x (only indexes) of the HWM tables",
     ["pg_repack", "-d", DB, "-x", "-t", "fencing.resource_hwm", "-t", "fencing.table_hwm",
      "-t", "fencing.row_tombstone"]),
    ("pg_repack -i of row_tombstone's lookup index and resource_hwm's primary key",
     ["pg_repack", "-d", DB, "-i", "fencing.row_tombstone_lookup", "-i",
      "fencing.resource_hwm_pkey"]),
    ("VACUUM FULL of the HWM tables and the user tables",
     "VACUUM FULL fencing.resource_hwm, fencing.table_hwm, fencing.row_tombstone, "
     "fencing.lease, rs, tt, rw"),
    ("CLUSTER of the HWM tables",
     "CLUSTER fencing.resource_hwm USING resource_hwm_pkey; "
     "CLUSTER fencing.table_hwm USING table_hwm_pkey"),
]

# PostgreSQL 19's REPACK, which replaces VACUUM FULL and CLUSTER. A tuple is
# run statement by statement (REPACK CONCURRENTLY refuses a transaction block).
ALL_FENCING_TABLES = FENCING_TABLES + ["fencing.reset_log", "fencing.resource_floor",
                                       "fencing.tombstone_floor"]
REPACK_REWRITES = [
    ("REPACK of every fencing table", tuple(f"REPACK {t}" for t in ALL_FENCING_TABLES)),
    ("REPACK of the protected user tables (row, resource, table scope)",
     ("REPACK rw", "REPACK rs", "REPACK tt")),
    ("REPACK (whole database) run 1", ("REPACK",)),
    ("REPACK (whole database) run 2", ("REPACK",)),
    ("REPACK ... USING INDEX of the HWM tables",
     ("REPACK fencing.resource_hwm USING INDEX resource_hwm_pkey",
      "REPACK fencing.table_hwm USING INDEX table_hwm_pkey")),
    # fencing.reset_log has no identity index, which REPACK (CONCURRENTLY)
    # needs (the server refuses it, 55000); plain REPACK above rewrites it.
    ("REPACK (CONCURRENTLY) of every fencing table with an identity index",
     tuple(f"REPACK (CONCURRENTLY) {t}" for t in ALL_FENCING_TABLES if t != "fencing.reset_log")),
    ("REPACK (CONCURRENTLY) of the protected user tables",
     ("REPACK (CONCURRENTLY) rw", "REPACK (CONCURRENTLY) rs", "REPACK (CONCURRENTLY) tt")),
]
if os.environ.get("REPACK_REWRITES", "pg_repack") == "repack":
    REWRITES = REPACK_REWRITES

n = 0
failures = 0


def check(description, ok, detail=""):
    global n, failures
    n += 1
    if ok:
        print(f"ok {n} - {description}", flush=True)
    else:
        failures += 1
        print(f"not ok {n} - {description}: {detail}", flush=True)


def connect():
    return psycopg.connect(autocommit=True)


clock_lock = threading.Lock()
clock = [1000]
stop = threading.Event()
errors = []  # unexpected errors
stale = [0]


def next_token():
    with clock_lock:
        clock[0] += 1
        return clock[0] + random.randint(-6, 2)


class NoRow(Exception):
    """A write that found no row (deleted and re-inserted meanwhile): rolled back."""


def write_one(conn, sql, *args):
    if conn.execute(sql, args or None).rowcount != 1:
        raise NoRow()


def raiser(index):
    conn = connect()
    rng = random.Random(SEED + index)
    keys = list(KEYS)
    while not stop.is_set():
        key = rng.choice(keys)
        token = next_token()
        try:
            with conn.transaction():
                conn.execute("SELECT set_config('fencing.token', %s, true)", (str(token),))
                if key.startswith("row:") and rng.random() < 0.3:
                    k = int(key[4:])
                    write_one(conn, "DELETE FROM rw WHERE id = %s", k)
                    write_one(conn, "INSERT INTO rw (id, v) VALUES (%s, 0)", k)
                else:
                    write_one(conn, KEYS[key][0])
                conn.execute("SELECT pg_sleep(0.004)")
                got = conn.execute("UPDATE ctr SET n = n + 1 WHERE k = %s RETURNING n",
                                   (key,)).fetchone()[0]
                conn.execute("INSERT INTO history (k, n, token) VALUES (%s, %s, %s)",
                             (key, got, token))
        except NoRow:
            pass
        except psycopg.Error as e:
            if e.sqlstate == "TF001":
                stale[0] += 1
            elif e.sqlstate in ("40P01", "40001", "57014", "57P01"):
                pass  # deadlock, serialization retry, pg_repack's cancel of a conflicting lock
            else:
                errors.append(f"{key} {token}: {e.sqlstate} {e}")
        except psycopg.OperationalError as e:
            errors.append(f"{key} {token}: {e}")
            conn = connect()


def leaser():
    conn = connect()
    while not stop.is_set():
        try:
            with conn.transaction():
                token = conn.execute(
                    "SELECT fencing_acquire('job', 'leaser', '1 minute')").fetchone()[0]
                conn.execute("SELECT pg_sleep(0.004)")
                conn.execute("SELECT fencing_release('job', %s)", (token,))
                got = conn.execute("UPDATE ctr SET n = n + 1 WHERE k = 'lease' RETURNING n"
                                   ).fetchone()[0]
                conn.execute("INSERT INTO history (k, n, token) VALUES ('lease', %s, %s)",
                             (got, token))
        except psycopg.Error as e:
            if e.sqlstate not in ("40P01", "40001", "57014", "57P01"):
                errors.append(f"lease: {e.sqlstate} {e}")


def committed_max(conn):
    return dict(conn.execute("SELECT k, max(token) FROM history GROUP BY k").fetchall())


def probe(conn, label):
    highest = committed_max(conn)
    bad = []
    for key, (write, _) in KEYS.items():
        if key not in highest:
            continue
        token = highest[key] - 1
        for attempt in range(10):  # a row deleted and re-inserted meanwhile: again
            try:
                with conn.transaction():
                    conn.execute("SELECT set_config('fencing.token', %s, true)", (str(token),))
                    if conn.execute(write).rowcount != 1:
                        raise NoRow()
                bad.append(f"{key}: {token} accepted")
            except NoRow:
                if attempt == 9:
                    bad.append(f"{key}: the probe found no row")
                continue
            except psycopg.Error as e:
                if e.sqlstate != "TF001":
                    bad.append(f"{key}: {e.sqlstate} {e}")
            break
    check(f"after {label}: a stale probe (highest committed token - 1) is refused in every "
          "scope", not bad, "; ".join(bad))


def main():
    admin = connect()
    threads = [threading.Thread(target=raiser, args=(i,)) for i in range(WORKERS)]
    threads.append(threading.Thread(target=leaser))
    for t in threads:
        t.start()
    time.sleep(1.0)
    rounds = int(os.environ.get("REPACK_ROUNDS", "1"))
    for label, rewrite in [(f"{lb} (round {r + 1})" if rounds > 1 else lb, rw)
                           for r in range(rounds) for lb, rw in REWRITES]:
        if isinstance(rewrite, list):
            r = subprocess.run(rewrite, capture_output=True, text=True, timeout=120)
            out = (r.stdout + r.stderr).strip()
            ok = r.returncode == 0 and "ERROR" not in out and "WARNING" not in out
            check(f"{label} succeeds under raisers", ok, f"rc {r.returncode}: {out[-400:]}")
        else:
            try:
                for statement in rewrite if isinstance(rewrite, tuple) else (rewrite,):
                    admin.execute(statement)
                check(f"{label} succeeds under raisers", True)
            except psycopg.Error as e:
                check(f"{label} succeeds under raisers", False, f"{e.sqlstate} {e}")
        probe(admin, label)
    stop.set()
    for t in threads:
        t.join()

    rows = admin.execute("SELECT k, n, token FROM history ORDER BY k, n").fetchall()
    by_key = {}
    for k, n_, token in rows:
        by_key.setdefault(k, []).append((n_, token))
    for key, (_, hwm_sql) in KEYS.items():
        seq = by_key.get(key, [])
        down = [(a, b) for a, b in zip(seq, seq[1:]) if b[1] < a[1]]
        check(f"{key}: {len(seq)} committed writes, tokens never decrease in commit order",
              len(seq) > 10 and not down, f"{len(seq)} writes, first drop {down[:1]}")
        hwm = admin.execute(hwm_sql).fetchone()[0]
        top = max((t for _, t in seq), default=None)
        check(f"{key}: the HWM equals the largest committed token", hwm is not None and
              top is not None and int(hwm) == top, f"HWM {hwm}, largest committed {top}")
    leases = by_key.get("lease", [])
    up = all(b[1] > a[1] for a, b in zip(leases, leases[1:]))
    check(f"lease: {len(leases)} tokens issued, strictly increasing in commit order",
          len(leases) > 10 and up, f"{len(leases)} tokens, increasing {up}")
    res = admin.execute("SELECT fencing_resource_high_water('job')").fetchone()[0]
    top = max((t for _, t in leases), default=None)
    check("lease: resource job's HWM equals the last token issued",
          res is not None and top is not None and int(res) == top, f"HWM {res}, last {top}")
    check("every error was an expected refusal", not errors, "; ".join(errors[:5]))
    check(f"some writes were stale and refused ({stale[0]})", stale[0] > 0)
    print(f"# seed {SEED}, {len(rows)} committed writes and leases, {stale[0]} refused",
          flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
