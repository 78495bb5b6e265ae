#!/usr/bin/python3
"""Stress with real pauses: many fenced writers in row, resource and table
scope, leases, SIGSTOP/SIGCONT of the client processes past the lease TTL.

Workers are processes (so they can be paused with SIGSTOP), each with one
connection. Each transaction is one of

  row scope (stress.rows, a few hot keys and many cold ones):
    UPDATE with the token in the column, UPDATE under SET LOCAL fencing.token,
    fenced_update(), DELETE and fenced_delete(), INSERT (re-insert of a deleted
    key), fenced_upsert(), a primary-key move (UPDATE ... SET id = b);
  resource scope (stress.res, namespace 'stress', hot and cold resources):
    the same UPDATE paths (v = v + 1), rows of two hot resources in random
    order in one transaction (so writers deadlock, and retry the same
    transaction on 40P01), fencing_acquire() of a lease (TTL
    250 ms) whose token the worker then writes with, fencing_renew(),
    fencing_release(), fencing_resource_advance();
  table scope (stress.tab): the same UPDATE paths (v = v + 1).

Tokens come from a shared clock that workers re-read now and then (so every
holder is overtaken and its writes go stale), sometimes deliberately old ones,
and from leases. A pauser SIGSTOPs a random worker for 300-900 ms (longer than
the lease TTL), often in the middle of a transaction that holds row and HWM
locks; some transactions also sleep while open.

Commit order. Every accepted write increments, as its last statements before
COMMIT (keys in sorted order), the counter row of each key it wrote (a row key,
a resource, the table) and records (kind, key, n, token, op, ...) in
stress.hist in the same transaction. The counter row's lock is held from the
increment until commit, so the next writer of that key reads the committed n:
per key, n orders the committed writes exactly as they committed, and a
transaction that rolls back leaves nothing. Leases issued are recorded the
same way (and in stress.leases).

Checks: per row and per resource (and the table), accepted tokens never
decrease in commit order (each is at least every token accepted before it; an
advance that returned true because the HWM already equalled its token is a
confirmation, not a write, and is exempt when that token was accepted
before it); every final HWM equals the largest accepted token;
no lease token was issued twice and the last one issued is fencing.lease's;
no lost update (each resource/table row's counter equals its accepted writes;
each row key's final state is the one its last accepted write left); the
history holds exactly the committed writes; only expected errors (TF001,
23505; 40P01 retried).

Retirement churner (STRESS_RETIRE=1): retirement is switched on for the
namespace 'stress' and the row table, and one more connection calls
fencing_retire(..., '0 s') on both in a loop while the workers run, so HWMs,
lease rows and tombstones are retired into floors as soon as they are idle.
The checks stay, except that a key's final HWM may then be its floor (at least
its largest accepted token, at most the largest of its kind), and a retired
lease row may be gone (its last token then at most the namespace's floor).

Environment: libpq variables; STRESS_WRITES (fenced write attempts, default
10000), STRESS_WORKERS (8), STRESS_SEED, STRESS_PAUSES (1/0),
STRESS_UNFENCED (1: no fencing on the row table, to see the checker fail),
STRESS_RETIRE (1: the retirement churner).
"""
import json
import multiprocessing as mp
import os
import random
import signal
import sys
import time
from collections import Counter

import psycopg

WRITES = int(os.environ.get("STRESS_WRITES", "10000"))
WORKERS = int(os.environ.get("STRESS_WORKERS", "8"))
SEED = int(os.environ.get("STRESS_SEED", str(int(time.time()))))
PAUSES = os.environ.get("STRESS_PAUSES", "1") == "1"
# STRESS_UNFENCED=1 unprotects the row table: the checker must then report
# violations (a check of the checker, not part of the suite).
UNFENCED = os.environ.get("STRESS_UNFENCED", "0") == "1"
RETIRE = os.environ.get("STRESS_RETIRE", "0") == "1"
ROW_HOT, ROW_KEYS = 4, 400
RES_HOT = ["h1", "h2", "h3"]
RES_COLD = [f"c{i}" for i in range(1, 61)]
RES_ROWS = 4  # rows per resource
TAB_ROWS = 20
TTL = "250 ms"
EXPECTED = {"TF001", "23505"}
RETRYABLE = {"40P01"}

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import finish, report  # noqa: E402


def setup(admin):
    resources = RES_HOT + RES_COLD
    for sql in (
        "DROP SCHEMA IF EXISTS stress CASCADE",
        # Resource HWMs outlive tables: start from none (an earlier run's).
        "SELECT count(fencing_resource_reset(resource, 'stress')) FROM fencing.resource_hwm"
        " WHERE namespace = 'stress'",
        "CREATE SCHEMA stress",
        "CREATE TABLE stress.rows (id int PRIMARY KEY, v bigint, fence fencing_token)",
        "CREATE TABLE stress.res (id int PRIMARY KEY, res text NOT NULL, v bigint NOT NULL,"
        " fence fencing_token)",
        # The seed rows of res and tab carry no token: they are opened to
        # token-less writes (every write of the run carries one).
        "SELECT fencing_protect('stress.res', scope => 'resource', resource_column => 'res',"
        " resource_namespace => 'stress', require_token => false)",
        "CREATE TABLE stress.tab (id int PRIMARY KEY, v bigint NOT NULL, fence fencing_token)",
        "SELECT fencing_protect('stress.tab', scope => 'table', require_token => false)",
        "CREATE TABLE stress.ctr (kind text, k text, n bigint NOT NULL, PRIMARY KEY (kind, k))",
        "CREATE TABLE stress.hist (kind text, k text, n bigint, token bigint NOT NULL,"
        " op text NOT NULL, rid int, v bigint, txid xid8 NOT NULL, PRIMARY KEY (kind, k, n))",
        # No key: a token issued twice must be recorded, not refused.
        "CREATE TABLE stress.leases (res text, token bigint, txid xid8)",
        # Initial state: every row key written with token 1 (history entry 0).
        f"INSERT INTO stress.rows SELECT g, g, 1 FROM generate_series(1, {ROW_KEYS}) g",
        f"INSERT INTO stress.ctr SELECT 'row', g::text, 0 FROM generate_series(1, {ROW_KEYS}) g",
        f"INSERT INTO stress.hist SELECT 'row', g::text, 0, 1, 'init', g, g, pg_current_xact_id()"
        f" FROM generate_series(1, {ROW_KEYS}) g",
        "INSERT INTO stress.ctr VALUES ('tab', 'tab', 0)",
        f"INSERT INTO stress.tab SELECT g, 0, NULL FROM generate_series(1, {TAB_ROWS}) g",
    ):
        admin.execute(sql)
    rid = 0
    for r in resources:
        admin.execute("INSERT INTO stress.ctr VALUES ('res', %s, 0)", (r,))
        for _ in range(RES_ROWS):
            rid += 1
            admin.execute("INSERT INTO stress.res VALUES (%s, %s, 0, NULL)", (rid, r))
    # Lease rows are never deleted: the shared clock starts above every token
    # an earlier run's leases issued, so clock tokens and lease tokens mix.
    return admin.execute("SELECT coalesce(max(token), 0) + 100 FROM fencing.lease"
                         " WHERE namespace = 'stress'").fetchone()[0]


class Stale(Exception):
    """A fenced_*() call wrote 0 rows: the token was stale (or no row)."""


def worker(index, seed, clock, attempts, results):
    rnd = random.Random(seed)
    stats = Counter()
    errors = []

    def connect():
        c = psycopg.connect("", autocommit=True)
        c.execute("SET statement_timeout = '120s'")
        return c

    conn = connect()
    holder = f"w{index}"
    leases = {}  # resource -> token of a lease this worker was granted

    def next_token():
        with clock.get_lock():
            clock.value += rnd.randint(1, 3)
            return clock.value

    token = next_token()
    all_res = RES_HOT + RES_COLD

    def record(kind, keys, tok, op, rid=None, vals=None):
        for i, k in enumerate(sorted(keys, key=lambda x: (len(x), x))):
            v = None if vals is None else vals.get(k)
            conn.execute(
                "WITH c AS (UPDATE stress.ctr SET n = n + 1 WHERE kind = %s AND k = %s"
                " RETURNING n)"
                " INSERT INTO stress.hist SELECT %s, %s, c.n, %s, %s, %s, %s, pg_current_xact_id()"
                " FROM c", (kind, k, kind, k, tok, op, rid, v))

    def maybe_sleep():
        if rnd.random() < 0.02:
            stats["sleeps in transaction"] += 1
            time.sleep(rnd.uniform(0.01, 0.1))

    def set_token(tok):
        conn.execute("SELECT set_config('fencing.token', %s, true)", (str(tok),))

    def row_op(tok):
        a = rnd.randint(1, ROW_HOT) if rnd.random() < 0.6 else rnd.randint(ROW_HOT + 1, ROW_KEYS)
        op = rnd.choice(["col", "guc", "fenced_update", "delete", "fenced_delete", "insert",
                         "fenced_upsert", "move", "col", "guc", "fenced_update", "fenced_upsert"])
        v = rnd.randint(1, 2**62)
        key = str(a)
        if op == "col":
            n = conn.execute("UPDATE stress.rows SET v = %s, fence = %s::bigint WHERE id = %s",
                             (v, tok, a)).rowcount
            return op, n, [key], {key: v}
        if op == "guc":
            set_token(tok)
            n = conn.execute("UPDATE stress.rows SET v = %s WHERE id = %s", (v, a)).rowcount
            return op, n, [key], {key: v}
        if op == "fenced_update":
            n = conn.execute("SELECT fenced_update('stress.rows', %s::bigint, %s, %s)",
                             (tok, json.dumps({"id": a}), json.dumps({"v": v}))).fetchone()[0]
            if n == 0:
                raise Stale()
            return op, n, [key], {key: v}
        if op == "delete":
            set_token(tok)
            n = conn.execute("DELETE FROM stress.rows WHERE id = %s", (a,)).rowcount
            return op, n, [key], {key: None}
        if op == "fenced_delete":
            n = conn.execute("SELECT fenced_delete('stress.rows', %s::bigint, %s)",
                             (tok, json.dumps({"id": a}))).fetchone()[0]
            if n == 0:
                raise Stale()
            return op, n, [key], {key: None}
        if op == "insert":
            n = conn.execute("INSERT INTO stress.rows VALUES (%s, %s, %s::bigint)",
                             (a, v, tok)).rowcount
            return op, n, [key], {key: v}
        if op == "fenced_upsert":
            n = conn.execute("SELECT fenced_upsert('stress.rows', %s::bigint, %s)",
                             (tok, json.dumps({"id": a, "v": v}))).fetchone()[0]
            if n == 0:
                raise Stale()
            return op, n, [key], {key: v}
        # move: the row leaves key a for key b
        b = rnd.randint(1, ROW_KEYS)
        if b == a:
            b = a % ROW_KEYS + 1
        n = conn.execute("UPDATE stress.rows SET id = %s, v = %s, fence = %s::bigint WHERE id = %s",
                         (b, v, tok, a)).rowcount
        return op, n, [key, str(b)], {key: None, str(b): v}

    def res_op(tok):
        r = rnd.choice(RES_HOT) if rnd.random() < 0.6 else rnd.choice(RES_COLD)
        rid = all_res.index(r) * RES_ROWS + rnd.randint(1, RES_ROWS)
        x = rnd.random()
        if x < 0.08:  # take a lease: the database issues the token
            t = conn.execute("SELECT fencing_acquire(%s, %s, %s, NULL, 'stress')::bigint",
                             (r, holder, TTL)).fetchone()[0]
            if t is None:
                stats["lease busy"] += 1
                return None
            if leases.get(r) == t:
                # A re-acquire of this worker's own live lease (the same
                # holder): its token again, nothing issued. Any other repeat
                # of a token is a violation the checks below count.
                stats["re-acquired"] += 1
                return None
            record("res", [r], t, "acquire")
            conn.execute("INSERT INTO stress.leases VALUES (%s, %s, pg_current_xact_id())", (r, t))
            return ("lease", r, t)
        if x < 0.11 and r in leases:
            ok = conn.execute("SELECT fencing_renew(%s, %s::bigint, %s, 'stress')",
                              (r, leases[r], TTL)).fetchone()[0]
            stats["renewed" if ok else "renew refused"] += 1
            return None
        if x < 0.13 and r in leases:
            ok = conn.execute("SELECT fencing_release(%s, %s::bigint, 'stress')",
                              (r, leases.pop(r))).fetchone()[0]
            stats["released" if ok else "release refused"] += 1
            return None
        if x < 0.21:
            # Two hot resources in random order, one transaction: writers
            # that take them in opposite orders deadlock (40P01, retried).
            written = []
            for rr in rnd.sample(RES_HOT, 2):
                rid2 = all_res.index(rr) * RES_ROWS + rnd.randint(1, RES_ROWS)
                conn.execute("UPDATE stress.res SET v = v + 1, fence = %s::bigint WHERE id = %s",
                             (tok, rid2))
                written.append((rr, rid2))
                if len(written) == 1:
                    time.sleep(rnd.uniform(0, 0.003))
            for rr, rid2 in sorted(written):
                record("res", [rr], tok, "pair", rid=rid2)
            return ("write", tok)
        tok = leases.get(r, tok)
        if x < 0.25:
            ok = conn.execute("SELECT fencing_resource_advance(%s, %s::bigint, 'stress')",
                              (r, tok)).fetchone()[0]
            if not ok:
                raise Stale()
            record("res", [r], tok, "advance")
            return ("write", tok)
        op = increment("stress.res", rid, tok)
        record("res", [r], tok, op, rid=rid)
        return ("write", tok)

    def increment(table, rid, tok):
        """v = v + 1 on one row of a resource- or table-scope table, through
        one of three paths; returns the path."""
        op = rnd.choice(["col", "guc", "fenced_update"])
        if op == "col":
            conn.execute(f"UPDATE {table} SET v = v + 1, fence = %s::bigint WHERE id = %s",
                         (tok, rid))
        elif op == "guc":
            set_token(tok)
            conn.execute(f"UPDATE {table} SET v = v + 1 WHERE id = %s", (rid,))
        else:
            # The jsonb argument is computed before fenced_update() locks the
            # row: lock it first, so the v + 1 read is the latest committed.
            conn.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE", (rid,))
            n = conn.execute(f"SELECT fenced_update('{table}', %s::bigint, %s,"
                             f" jsonb_build_object('v', (SELECT v + 1 FROM {table} WHERE id = %s)))",
                             (tok, json.dumps({"id": rid}), rid)).fetchone()[0]
            if n == 0:
                raise Stale()
        maybe_sleep()
        return op

    def tab_op(tok):
        rid = rnd.randint(1, TAB_ROWS)
        op = increment("stress.tab", rid, tok)
        record("tab", ["tab"], tok, op, rid=rid)
        return ("write", tok)

    while attempts.value < WRITES:
        if rnd.random() < 0.2:
            token = next_token()  # re-acquired the lock
        tok = token
        if rnd.random() < 0.05:
            tok = max(1, token - rnd.randint(1, 50))  # a deliberately old token
        scope = rnd.random()
        attempted = True
        state = rnd.getstate()
        for attempt in range(20):
            if attempt:
                rnd.setstate(state)  # a retry repeats the same transaction
            try:
                conn.execute("BEGIN")
                if scope < 0.5:
                    op, n, keys, vals = row_op(tok)
                    maybe_sleep()
                    if n:
                        record("row", keys, tok, op, vals=vals)
                    else:
                        stats["no row"] += 1
                    out = ("write", tok) if n else None
                elif scope < 0.85:
                    out = res_op(tok)
                    attempted = out is not None
                else:
                    out = tab_op(tok)
                conn.execute("COMMIT")
                if out and out[0] == "lease":
                    leases[out[1]] = out[2]
                    stats["leases"] += 1
                elif out:
                    stats["accepted"] += 1
                break
            except Stale:
                conn.execute("ROLLBACK")
                stats["rejected (0 rows)"] += 1
                break
            except psycopg.Error as e:
                if conn.closed or conn.broken:
                    # Taken over: a successor's acquire ended this session
                    # while it wrote with its expired lease's token (TF003,
                    # or 57P01 without shared_preload_libraries). Its open
                    # transaction rolled back; the history shows only what
                    # committed. Any other lost connection is an error.
                    msg = str(e)
                    if e.sqlstate in ("TF003", "57P01") or "taken over" in msg \
                            or "administrator command" in msg:
                        stats["taken over"] += 1
                    else:
                        errors.append(f"[lost connection] {msg.splitlines()[0] if msg else e!r}")
                    conn = connect()
                    leases.clear()
                    break
                conn.execute("ROLLBACK")
                st = e.sqlstate or "?"
                if st in RETRYABLE:
                    stats["deadlocks retried"] += 1
                    continue
                if st == "TF001":
                    stats["rejected (TF001)"] += 1
                elif st == "23505":
                    stats["duplicate key"] += 1
                else:
                    stats[st] += 1
                    errors.append(f"[{st}] {str(e).splitlines()[0]}")
                break
        if attempted:
            with attempts.get_lock():
                attempts.value += 1
    conn.close()
    results.put((index, dict(stats), errors[:5], len(errors)))


def pauser(procs, stop, stats):
    rnd = random.Random(SEED + 7)
    while not stop.is_set():
        if stop.wait(rnd.uniform(0.2, 1.0)):
            break
        p = rnd.choice(procs)
        if not p.is_alive():
            continue
        try:
            os.kill(p.pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        stats["pauses"] += 1
        time.sleep(rnd.uniform(0.3, 0.9))  # longer than the lease TTL
        try:
            os.kill(p.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def churner(stop, stats):
    """Retires the namespace's and the row table's idle state until stopped."""
    conn = psycopg.connect("", autocommit=True)
    while not stop.is_set():
        for sql in ("SELECT fencing_retire('stress', '0 s')",
                    "SELECT fencing_retire('stress.rows'::regclass, '0 s')"):
            try:
                stats["retired"] += conn.execute(sql).fetchone()[0]
                stats["calls"] += 1
            except psycopg.Error as e:
                stats[f"error {e.sqlstate}"] += 1
    conn.close()


def main():
    admin = psycopg.connect("", autocommit=True)
    admin.execute("SET client_min_messages = warning")
    admin.execute("CREATE EXTENSION IF NOT EXISTS fencing")
    start = setup(admin)
    if UNFENCED:
        admin.execute("SELECT fencing_unprotect('stress.rows')")
    if RETIRE:
        admin.execute("SELECT fencing_enable_retirement('stress')")
        admin.execute("SELECT fencing_enable_retirement('stress.rows'::regclass)")
    clock = mp.Value("q", start)
    attempts = mp.Value("q", 0)
    results = mp.Queue()
    ctx_procs = [mp.Process(target=worker, args=(i, SEED * 1000 + i, clock, attempts, results))
                 for i in range(WORKERS)]
    started = time.time()
    for p in ctx_procs:
        p.start()
    import threading
    stop = threading.Event()
    pstats = Counter()
    pt = threading.Thread(target=pauser, args=(ctx_procs, stop, pstats))
    if PAUSES:
        pt.start()
    rstats = Counter()
    rt = threading.Thread(target=churner, args=(stop, rstats))
    if RETIRE:
        rt.start()
    collected = []
    while len(collected) < WORKERS:
        collected.append(results.get())
    stop.set()
    if PAUSES:
        pt.join()
    if RETIRE:
        rt.join()
    for p in ctx_procs:
        try:
            os.kill(p.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        p.join()
    elapsed = time.time() - started
    stats = Counter()
    errors = []
    nerrors = 0
    for _, s, e, ne in collected:
        stats.update(s)
        errors += e
        nerrors += ne

    def scalar(sql, args=()):
        return admin.execute(sql, args).fetchone()[0]

    # prev: the largest token accepted before, in commit order. An advance
    # whose token equals an HWM committed before it returns true without
    # raising or locking (the HWM is at least its token): it is a
    # confirmation, not a write, and may commit after a higher raise.
    admin.execute(
        "CREATE TEMP VIEW ordered AS SELECT kind, k, n, token, op, txid,"
        " max(token) OVER w AS prev,"
        " op = 'advance' AND EXISTS (SELECT 1 FROM stress.hist e WHERE e.kind = h.kind"
        "   AND e.k = h.k AND e.n < h.n AND e.token = h.token) AS confirms"
        " FROM stress.hist h WINDOW w AS (PARTITION BY kind, k ORDER BY n"
        " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    writes = stats["accepted"] + stats["leases"]
    rejections = stats["rejected (TF001)"] + stats["rejected (0 rows)"]
    decreases = {kind: scalar("SELECT count(*) FROM ordered WHERE kind = %s AND token < prev"
                              " AND NOT confirms", (kind,)) for kind in ("row", "res", "tab")}
    confirmations = scalar("SELECT count(*) FROM ordered WHERE confirms AND token < prev")
    for row in admin.execute("SELECT kind, k, n, prev, token, op FROM ordered WHERE token < prev"
                             " AND NOT confirms ORDER BY kind, k, n LIMIT 5").fetchall():
        print(f"# decrease: {row}")
    gaps = scalar("SELECT count(*) FROM stress.ctr c"
                  " WHERE c.n <> (SELECT count(*) FROM stress.hist h"
                  "               WHERE h.kind = c.kind AND h.k = c.k AND h.n > 0)")
    hist_txns = scalar("SELECT count(DISTINCT txid) FROM stress.hist WHERE op <> 'init'")
    # Under retirement a final HWM may be the floor: at least the key's
    # largest accepted token, at most the largest accepted of its kind.
    wrong = ("hwm IS NULL OR hwm < top OR hwm > (SELECT max(token) FROM stress.hist"
             " WHERE kind = '{kind}')") if RETIRE else "hwm IS DISTINCT FROM top"
    row_hwm = 0 if UNFENCED else scalar(
        "SELECT count(*) FROM (SELECT k, max(token) AS top,"
        " fencing_high_water('stress.rows', jsonb_build_object('id', k::int))::bigint AS hwm"
        " FROM stress.hist WHERE kind = 'row' GROUP BY k) x WHERE " + wrong.format(kind="row"))
    res_hwm = scalar(
        "SELECT count(*) FROM (SELECT k, max(token) AS top,"
        " fencing_resource_high_water(k, 'stress')::bigint AS hwm"
        " FROM stress.hist WHERE kind = 'res' GROUP BY k) x WHERE " + wrong.format(kind="res"))
    res_untouched = 0 if RETIRE else scalar(
        "SELECT count(*) FROM stress.ctr c WHERE kind = 'res' AND n = 0"
        " AND fencing_resource_high_water(k, 'stress') IS NOT NULL")
    tab_hwm = scalar(
        "SELECT count(*) FROM (SELECT max(token) AS top FROM stress.hist WHERE kind = 'tab') x"
        " WHERE fencing_high_water('stress.tab')::bigint IS DISTINCT FROM top")
    dup_leases = scalar("SELECT count(*) FROM (SELECT k, token FROM stress.hist"
                        " WHERE op = 'acquire' GROUP BY k, token HAVING count(*) > 1) d")
    dup_leases += scalar("SELECT count(*) - count(DISTINCT (res, token)) FROM stress.leases")
    lease_last = scalar(
        "SELECT count(*) FROM (SELECT res, max(token) AS top FROM stress.leases GROUP BY res) x"
        " LEFT JOIN fencing.lease l ON l.namespace = 'stress' AND l.resource = x.res"
        " WHERE l.token IS DISTINCT FROM x.top"
        + (" AND NOT (l.token IS NULL AND x.top <= (SELECT floor FROM fencing.resource_floor"
           " WHERE namespace = 'stress'))" if RETIRE else ""))
    leases_logged = scalar("SELECT count(*) FROM stress.leases")
    lost_res = scalar(
        "SELECT count(*) FROM stress.res r WHERE r.v <> (SELECT count(*) FROM stress.hist h"
        " WHERE h.kind = 'res' AND h.rid = r.id AND h.op NOT IN ('acquire', 'advance'))")
    lost_tab = scalar(
        "SELECT count(*) FROM stress.tab t WHERE t.v <> (SELECT count(*) FROM stress.hist h"
        " WHERE h.kind = 'tab' AND h.rid = t.id)")
    lost_row = scalar(
        "SELECT count(*) FROM (SELECT DISTINCT ON (k) k, v FROM stress.hist WHERE kind = 'row'"
        " ORDER BY k, n DESC) last FULL JOIN stress.rows r ON r.id = last.k::int"
        " WHERE last.v IS DISTINCT FROM r.v")
    if RETIRE:
        print(f"# retirement churner: {dict(rstats)}")
        report(rstats["retired"] > 0 and not [k for k in rstats if k.startswith("error")],
               f"the churner retired {rstats['retired']} entries in {rstats['calls']} calls, no error")
    violations = (sum(decreases.values()) + row_hwm + res_hwm + res_untouched + tab_hwm
                  + dup_leases + lease_last + lost_res + lost_tab + lost_row + gaps)
    print(f"# {attempts.value} fenced write attempts by {WORKERS} processes in {elapsed:.1f} s, seed {SEED}")
    print(f"# writes accepted: {stats['accepted']}, leases issued: {stats['leases']}"
          f" (logged {leases_logged}), rejections: {rejections}"
          f" ({stats['rejected (TF001)']} TF001, {stats['rejected (0 rows)']} 0-row fenced calls),"
          f" no row: {stats['no row']}, duplicate keys: {stats['duplicate key']},"
          f" lease busy: {stats['lease busy']}, re-acquired: {stats['re-acquired']},"
          f" holders taken over: {stats['taken over']}")
    print(f"# pauses (SIGSTOP): {pstats['pauses']}, sleeps in open transactions:"
          f" {stats['sleeps in transaction']}, deadlocks retried: {stats['deadlocks retried']},"
          f" renewals: {stats['renewed']}/{stats['renewed'] + stats['renew refused']},"
          f" releases: {stats['released']}/{stats['released'] + stats['release refused']},"
          f" advances confirming an equal HWM after a higher raise: {confirmations}")
    print(f"# violations: {violations}")
    report(nerrors == 0, f"only expected errors (TF001, 23505, 40P01 retried)"
           + ("" if not nerrors else f": {nerrors}, e.g. {errors[:3]}"))
    report(writes > 0 and rejections > 0,
           f"writes were accepted ({writes}) and refused ({rejections})")
    report(PAUSES is False or pstats["pauses"] > 0, f"workers were paused ({pstats['pauses']})")
    report(stats["leases"] > 0 and stats["leases"] == leases_logged,
           f"leases were issued ({stats['leases']}) and each is in the history")
    report(gaps == 0 and hist_txns == writes,
           f"the history holds exactly the committed writes ({hist_txns} transactions, {gaps} gaps)")
    for kind, what in (("row", "per row"), ("res", "per resource"), ("tab", "per table")):
        report(decreases[kind] == 0,
               f"{what}, accepted tokens never decrease in commit order ({decreases[kind]})")
    report(row_hwm == 0, f"every row key's HWM is its largest accepted token ({row_hwm} differ)")
    report(res_hwm == 0 and res_untouched == 0,
           f"every resource HWM is its largest accepted token ({res_hwm + res_untouched} differ)")
    report(tab_hwm == 0, "the table HWM is its largest accepted token")
    report(dup_leases == 0, f"no lease token issued twice ({dup_leases})")
    report(lease_last == 0, f"fencing.lease holds each resource's last issued token ({lease_last})")
    report(lost_res + lost_tab + lost_row == 0,
           f"no lost update ({lost_row} row keys, {lost_res} resource rows, {lost_tab} table rows)")
    report(violations == 0, f"violations: {violations}")
    admin.execute("DROP VIEW ordered")
    status = finish()
    if status == 0:  # kept for inspection when a check failed
        admin.execute("DROP SCHEMA stress CASCADE")
    admin.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
