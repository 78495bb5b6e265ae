#!/usr/bin/python3
"""Key-move stress: DELETE, primary-key-moving UPDATE and INSERT on a few keys
from many connections, against a row-scope table, non-strict and strict.

Each worker is a lock holder: now and then it re-acquires the lock and gets a
fresh token from a shared lock-service clock, in between it keeps writing with
the token it has, which other holders' newer tokens make stale. Every write is
one READ COMMITTED transaction carrying its token in the token column or in
fencing.token.

Commit order. A transaction that wrote keys K1 < K2 ... increments, as its last
statements before COMMIT and in key order, the counter row of each key
(UPDATE ctr SET n = n + 1 WHERE k = K RETURNING n) and records (key, n, token,
txid) in the history table in the same transaction. The counter row's lock is
held until commit, so a second writer of the key waits for the first to commit
and then reads the committed n: per key, n orders the committed writes exactly
as they committed, and a transaction that rolls back leaves neither its
increment nor its history rows. (Commit timestamps would need
track_commit_timestamp and a server restart, and are wall-clock values; a
global sequence would need a lock ordering all commits.)

Checks, per table and key: tokens never decrease in commit order (strict: they
strictly increase, as each token is admitted to one transaction); the key's
high-water mark equals the largest committed token; every error is an
expected refusal (TF001, a unique violation, a deadlock). Prints "ok N - ..."
or "not ok N - ..." lines and a summary; exits non-zero on a failure.

Retirement churner (KEYMOVE_RETIRE=1): the table's retirement is switched on
and one more connection calls fencing_retire(table, '0 s') in a loop while the
workers run, so deleted keys' tombstones are retired into the table's floor as
soon as they commit, and INSERTs of those keys are judged by the floor. The
tokens come from one clock, retirement's precondition. The checks stay, except
that a key's HWM may then be its floor: at least its largest committed token
and at most the largest committed token of all keys.

Environment: the libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE);
KEYMOVE_SECONDS (per mode, default 20), KEYMOVE_WORKERS (default 8),
KEYMOVE_KEYS (default 3), KEYMOVE_SEED, KEYMOVE_RETIRE (default 0).
"""
import os
import random
import sys
import threading
import time
from collections import Counter

import psycopg

SECONDS = float(os.environ.get("KEYMOVE_SECONDS", "20"))
WORKERS = int(os.environ.get("KEYMOVE_WORKERS", "8"))
KEYS = int(os.environ.get("KEYMOVE_KEYS", "3"))
SEED = int(os.environ.get("KEYMOVE_SEED", str(int(time.time()))))
RETIRE = os.environ.get("KEYMOVE_RETIRE", "0") == "1"
EXPECTED_REFUSALS = {"TF001", "23505", "40P01"}

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import finish, report  # noqa: E402


class LockService:
    """Hands out strictly increasing tokens."""

    def __init__(self):
        self._lock = threading.Lock()
        self._clock = 100

    def acquire(self):
        with self._lock:
            self._clock += 1
            return self._clock


def worker(table, ctr, hist, seed, deadline, service, stats, errors):
    rnd = random.Random(seed)
    conn = psycopg.connect("", autocommit=True)
    conn.execute("SET statement_timeout = '60s'")
    token = service.acquire()
    while time.time() < deadline:
        if rnd.random() < 0.3:
            token = service.acquire()  # re-acquired the lock
        a = rnd.randint(1, KEYS)
        b = rnd.choice([k for k in range(1, KEYS + 1) if k != a])
        op = rnd.choice(["delete", "move", "move", "insert"])
        in_column = rnd.random() < 0.5
        try:
            conn.execute("BEGIN")
            if not in_column or op == "delete":
                conn.execute("SELECT set_config('fencing.token', %s, true)", (str(token),))
            if op == "delete":
                written = conn.execute(f"DELETE FROM {table} WHERE id = %s", (a,)).rowcount
                keys = [a]
            elif op == "move":
                sets = "id = %s, fence = %s::bigint" if in_column else "id = %s"
                args = (b, token, a) if in_column else (b, a)
                written = conn.execute(f"UPDATE {table} SET {sets} WHERE id = %s", args).rowcount
                keys = [a, b]
            else:
                values = "(%s, 0, %s::bigint)" if in_column else "(%s, 0, NULL)"
                args = (a, token) if in_column else (a,)
                written = conn.execute(f"INSERT INTO {table} VALUES {values}", args).rowcount
                keys = [a]
            if written:
                for k in sorted(keys):
                    n = conn.execute(f"UPDATE {ctr} SET n = n + 1 WHERE k = %s RETURNING n",
                                     (k,)).fetchone()[0]
                    conn.execute(f"INSERT INTO {hist} VALUES (%s, %s, %s, pg_current_xact_id(), %s)",
                                 (k, n, token, op))
            conn.execute("COMMIT")
            stats["written" if written else "no row"] += 1
        except psycopg.Error as e:
            conn.execute("ROLLBACK")
            stats[e.sqlstate or "?"] += 1
            if e.sqlstate not in EXPECTED_REFUSALS:
                errors.append(f"{op}: [{e.sqlstate}] {str(e).splitlines()[0]}")
    conn.close()


def churner(table, deadline, retired, errors):
    """Retires every tombstone of table, again and again, until the deadline."""
    conn = psycopg.connect("", autocommit=True)
    while time.time() < deadline:
        try:
            retired.append(conn.execute(f"SELECT fencing_retire('{table}'::regclass, '0 s')").fetchone()[0])
        except psycopg.Error as e:
            errors.append(f"retire: [{e.sqlstate}] {str(e).splitlines()[0]}")
    conn.close()


def run_mode(admin, strict):
    mode = "strict" if strict else "non-strict"
    table, ctr, hist = (f"keymove_{'strict' if strict else 'loose'}_{x}"
                        for x in ("data", "ctr", "hist"))
    for sql in (f"DROP TABLE IF EXISTS {table}, {ctr}, {hist}",
                f"CREATE TABLE {table} (id int PRIMARY KEY, v int, fence fencing_token)",
                f"CREATE TABLE {ctr} (k int PRIMARY KEY, n bigint NOT NULL)",
                f"CREATE TABLE {hist} (k int, n bigint, token bigint, txid xid8, op text,"
                f" PRIMARY KEY (k, n))",
                f"INSERT INTO {ctr} SELECT g, 0 FROM generate_series(1, {KEYS}) g"):
        admin.execute(sql)
    if strict:
        admin.execute(f"SELECT fencing_protect('{table}', strict => true)")
    if RETIRE:
        admin.execute(f"SELECT fencing_enable_retirement('{table}'::regclass)")
    service = LockService()
    stats = Counter()
    errors = []
    retired = []
    started = time.time()
    deadline = started + SECONDS
    threads = [threading.Thread(target=worker,
                                args=(table, ctr, hist, SEED * 1000 + i, deadline, service,
                                      stats, errors))
               for i in range(WORKERS)]
    if RETIRE:
        threads.append(threading.Thread(target=churner, args=(table, deadline, retired, errors)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - started

    def scalar(sql):
        return admin.execute(sql).fetchone()[0]

    # The history in commit order per key, each write next to the one before.
    admin.execute(
        f"CREATE TEMP VIEW {hist}_ordered AS SELECT k, n, token, txid, op,"
        f" lag(token) OVER w AS prev, lag(txid) OVER w AS prev_txid, lag(op) OVER w AS prev_op"
        f" FROM {hist} WINDOW w AS (PARTITION BY k ORDER BY n)")
    writes = scalar(f"SELECT count(DISTINCT txid) FROM {hist}")
    per_key = scalar(f"SELECT count(*) FROM {hist}")
    decreases = scalar(f"SELECT count(*) FROM {hist}_ordered WHERE token < prev")
    repeats = scalar(
        f"SELECT count(*) FROM {hist}_ordered WHERE token = prev AND txid <> prev_txid")
    gaps = scalar(f"SELECT count(*) FROM {ctr} c"
                  f" WHERE c.n <> (SELECT count(*) FROM {hist} h WHERE h.k = c.k)")
    # Under retirement a key's HWM may be the table's floor: at least the key's
    # largest committed token, at most the largest of all keys.
    hwm_wrong = ("hwm IS NULL OR hwm < top OR hwm > (SELECT max(token) FROM {hist})"
                 if RETIRE else "hwm IS DISTINCT FROM top").format(hist=hist)
    hwm_mismatch = scalar(
        f"SELECT string_agg(format('key %s: HWM %s, max committed %s', k, hwm, top), '; ')"
        f" FROM (SELECT k, max(token) AS top,"
        f" fencing_high_water('{table}', jsonb_build_object('id', k))::bigint AS hwm"
        f" FROM {hist} GROUP BY k) x WHERE {hwm_wrong}")
    for row in admin.execute(
            f"SELECT k, n, prev_op, prev, op, token FROM {hist}_ordered WHERE token < prev"
            f" ORDER BY k, n LIMIT 5").fetchall():
        print(f"# {mode}: key {row[0]} #{row[1]}: {row[2]} {row[3]} then {row[4]} {row[5]}")

    print(f"# {mode}: {writes} committed writes ({per_key} key writes) in {elapsed:.1f} s,"
          f" {WORKERS} connections, {KEYS} keys, seed {SEED}; outcomes {dict(stats)}")
    print(f"# {mode}: {decreases} decreases in commit order")
    if RETIRE:
        print(f"# {mode}: the churner retired {sum(retired)} tombstones in {len(retired)} calls")
        report(sum(retired) > 0, f"{mode}: the churner retired tombstones ({sum(retired)})")
    report(not errors, f"{mode}: only expected refusals (TF001, 23505, 40P01)"
           + ("" if not errors else f": {errors[:3]}"))
    report(writes > 0 and stats["TF001"] > 0,
           f"{mode}: writes were committed ({writes}) and refused ({stats['TF001']} TF001)")
    report(gaps == 0, f"{mode}: the history holds exactly the committed writes")
    report(decreases == 0, f"{mode}: tokens never decrease in commit order ({decreases} decreases)")
    if strict:
        report(repeats == 0,
               f"{mode}: no token admitted to two transactions ({repeats} repeats)")
    report(hwm_mismatch is None,
           f"{mode}: each key's HWM is its largest committed token"
           + ("" if hwm_mismatch is None else f" ({hwm_mismatch})"))
    admin.execute(f"DROP VIEW {hist}_ordered")
    admin.execute(f"DROP TABLE {table}, {ctr}, {hist}")


def main():
    admin = psycopg.connect("", autocommit=True)
    admin.execute("SET client_min_messages = warning")
    admin.execute("CREATE EXTENSION IF NOT EXISTS fencing")
    run_mode(admin, strict=False)
    run_mode(admin, strict=True)
    admin.close()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
