"""Fenced writers and the checker of the migrations suite (test/migrations).

Three fenced tables per database, one per scope, with the logical names
"row", "table" and "resource"; their physical names sit in mig.alias, which a
migration that renames a table updates in the same transaction:

    row       (id int PRIMARY KEY, v bigint, fence fencing_token)      row scope
    table     (id int PRIMARY KEY, v bigint, fence fencing_token)      table scope
    resource  (id int PRIMARY KEY, shard text, v bigint, fence ...)    resource scope,
                                                                       namespace mig_<db>

Writers. WRITERS processes (multiprocessing, one connection each) write in
READ COMMITTED transactions that carry a token (set_config('fencing.token',
.., true)). Tokens come from a shared clock with jitter, so some are stale
and refused (TF001). A row-scope write updates the row, deletes it (a
tombstone that stays until a later write re-inserts the key) or re-inserts it;
table- and resource-scope writes update a row. Every write sets v to a value
no other write uses.

Commit order. As its last statement, each write increments the counter row of
its fence key (the row, the table, the resource) in mig.ctr and records
(fence key, n, token, row, op, value) in mig.hist, in the same transaction:
the counter row's lock orders a fence key's commits exactly. The writer also
records, after COMMIT returned, every acknowledged write in its own file.

The checker, after each migration, with the writers paused:
  * stale accepted = 0: per fence key, tokens never decrease in commit order,
    and a probe with the highest committed token - 1 (an UPDATE, or an INSERT
    of a deleted key) is refused with TF001;
  * acknowledged writes lost = 0: every acknowledged write is in mig.hist, and
    every row holds the value of its last committed write (absent after a
    DELETE);
  * no HWM lowered: every fence key's HWM (fencing_high_water,
    fencing_resource_high_water), every table HWM, resource HWM and floor and
    tombstone count is at least what the snapshot before the migration held,
    and every fence key's HWM is at least its largest committed token;
  * the policy (token column, scope, namespace, require_token) is the one
    before, and its guards are in place; nothing in fencing.reset_log.
"""
import multiprocessing as mp
import os
import random
import sys
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import finish, report  # noqa: E402,F401

ROW_IDS = range(1, 9)
TABLE_IDS = range(1, 5)
RESOURCE_IDS = range(1, 7)
# Concurrency outcomes a writer retries: deadlock, serialization, a canceled lock wait,
# a table renamed or swapped under it, two writers re-inserting one deleted key.
RETRYABLE = {"40P01", "40001", "57014", "42P01", "42703", "55P03", "23505"}

SETUP = """
CREATE EXTENSION IF NOT EXISTS fencing;
CREATE SCHEMA mig;
CREATE TABLE mig.alias (logical text PRIMARY KEY, physical text NOT NULL);
CREATE TABLE mig.ctr (k text PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
CREATE TABLE mig.hist (k text, n bigint, token bigint, rk text, op text, val bigint,
                       PRIMARY KEY (k, n));
"""


def connect(**kw):
    return psycopg.connect(autocommit=True, **kw)


def namespace(conn):
    return "mig_" + conn.info.dbname


def prepare(conn):
    """The extension and the suite's bookkeeping (schema mig)."""
    conn.execute(SETUP)


def create_tables(conn, prefix, create=True, row_token_type="fencing_token"):
    """Creates (unless create is False: a tool created them) the three tables
    named PREFIX_row, PREFIX_tab, PREFIX_res, fences them, seeds them at token
    10 and records their names. ROW_TOKEN_TYPE bigint: the row-scope table is
    fenced on a bigint column."""
    ns = namespace(conn)
    names = {"row": f"{prefix}_row", "table": f"{prefix}_tab", "resource": f"{prefix}_res"}
    if create:
        conn.execute(f"CREATE TABLE {names['row']} (id int PRIMARY KEY, v bigint, "
                     f"fence {row_token_type})")
        conn.execute(f"CREATE TABLE {names['table']} (id int PRIMARY KEY, v bigint, "
                     "fence fencing_token)")
        if row_token_type != "fencing_token":
            conn.execute(f"SELECT fencing_protect('{names['row']}', token_column => 'fence')")
        conn.execute(f"CREATE TABLE {names['resource']} (id int PRIMARY KEY, shard text NOT NULL,"
                     " v bigint, fence fencing_token)")
        conn.execute(f"SELECT fencing_protect('{names['table']}', scope => 'table')")
        conn.execute(f"SELECT fencing_protect('{names['resource']}', scope => 'resource', "
                     f"resource_column => 'shard', resource_namespace => '{ns}')")
    for logical, physical in names.items():
        conn.execute("INSERT INTO mig.alias VALUES (%s, %s)", (logical, physical))
    with conn.transaction():
        conn.execute("SELECT set_config('fencing.token', '10', true)")
        for i in ROW_IDS:
            conn.execute(f"INSERT INTO {names['row']} (id, v) VALUES (%s, 0)", (i,))
        for i in TABLE_IDS:
            conn.execute(f"INSERT INTO {names['table']} (id, v) VALUES (%s, 0)", (i,))
        for i in RESOURCE_IDS:
            conn.execute(f"INSERT INTO {names['resource']} (id, shard, v) VALUES (%s, %s, 0)",
                         (i, shard_of(i)))
    return names


def shard_of(i):
    return "s1" if i % 2 else "s2"


def aliases(conn):
    return dict(conn.execute("SELECT logical, physical FROM mig.alias").fetchall())


def fence_key(logical, i):
    if logical == "row":
        return f"row:{i}"
    if logical == "table":
        return "table"
    return f"resource:{shard_of(i)}"


# ------------------------------------------------------------------ writers
def writer(index, dsn_kw, clock, lock, running, idle, stop, ackfile, seed):
    rng = random.Random(seed * 100 + index)
    conn = connect(**dsn_kw)
    names = aliases(conn)
    seq = 0
    with open(ackfile, "a") as acks:
        while not stop.is_set():
            if not running.is_set():
                idle.set()
                time.sleep(0.01)
                continue
            idle.clear()
            logical = rng.choice(["row", "row", "table", "resource"])
            ids = {"row": ROW_IDS, "table": TABLE_IDS, "resource": RESOURCE_IDS}[logical]
            i = rng.choice(list(ids))
            with lock:
                clock.value += 1
                token = clock.value + rng.randint(-6, 2)
            seq += 1
            val = index * 10**9 + seq
            k = fence_key(logical, i)
            t = names[logical]
            op = "update"
            try:
                with conn.transaction():
                    conn.execute("SELECT set_config('fencing.token', %s, true)", (str(token),))
                    if logical == "row" and rng.random() < 0.25:
                        op = "delete"
                        cur = conn.execute(f"DELETE FROM {t} WHERE id = %s", (i,))
                    else:
                        cur = conn.execute(f"UPDATE {t} SET v = %s WHERE id = %s", (val, i))
                        if cur.rowcount == 0 and logical == "row":
                            op = "insert"
                            cur = conn.execute(f"INSERT INTO {t} (id, v) VALUES (%s, %s)",
                                               (i, val))
                    if cur.rowcount != 1:
                        raise NoRow()
                    n = conn.execute("UPDATE mig.ctr SET n = n + 1 WHERE k = %s RETURNING n",
                                     (k,)).fetchone()
                    if n is None:
                        n = conn.execute("INSERT INTO mig.ctr VALUES (%s, 1) ON CONFLICT (k) DO "
                                         "UPDATE SET n = mig.ctr.n + 1 RETURNING n",
                                         (k,)).fetchone()
                    conn.execute("INSERT INTO mig.hist VALUES (%s, %s, %s, %s, %s, %s)",
                                 (k, n[0], token, f"{logical}:{i}", op, val))
                acks.write(f"{k} {n[0]} {token}\n")
                acks.flush()
            except NoRow:
                pass
            except psycopg.Error as e:
                if e.sqlstate in ("42P01", "42703"):
                    names = aliases(conn)  # renamed or being swapped
                    time.sleep(0.02)
                elif e.sqlstate not in RETRYABLE and e.sqlstate != "TF001":
                    acks.write(f"ERROR {e.sqlstate} {str(e).splitlines()[0]}\n")
                    acks.flush()
                    time.sleep(0.02)
            except psycopg.OperationalError as e:
                acks.write(f"ERROR conn {e}\n")
                conn = connect(**dsn_kw)
    idle.set()


class NoRow(Exception):
    pass


class Writers:
    """WRITERS writer processes over the three tables; pause() waits until
    every writer is between transactions."""

    def __init__(self, workdir, count=None, seed=None):
        self.count = count or int(os.environ.get("MIG_WRITERS", "3"))
        self.seed = seed if seed is not None else int(os.environ.get("MIG_SEED", time.time()))
        self.clock = mp.Value("q", 1000)
        self.lock = mp.Lock()
        self.running = mp.Event()
        self.stop_ev = mp.Event()
        self.idles = [mp.Event() for _ in range(self.count)]
        self.ackfiles = [os.path.join(workdir, f"acks.{i}") for i in range(self.count)]
        self.procs = []

    def start(self):
        self.running.set()
        for i in range(self.count):
            p = mp.Process(target=writer, args=(i + 1, {}, self.clock, self.lock, self.running,
                                                self.idles[i], self.stop_ev, self.ackfiles[i],
                                                self.seed))
            p.start()
            self.procs.append(p)

    def pause(self):
        for e in self.idles:
            e.clear()
        self.running.clear()
        for e in self.idles:
            e.wait(30)

    def resume(self):
        self.running.set()

    def raise_clock(self, to):
        with self.lock:
            self.clock.value = max(self.clock.value, to)

    def stop(self):
        self.stop_ev.set()
        self.running.set()
        for p in self.procs:
            p.join(30)

    def acknowledged(self):
        acked, errors = [], []
        for f in self.ackfiles:
            if not os.path.exists(f):
                continue
            for line in open(f):
                if line.startswith("ERROR"):
                    errors.append(line.strip())
                else:
                    k, n, token = line.split()
                    acked.append((k, int(n), int(token)))
        return acked, errors


# ------------------------------------------------------------------ snapshots
def value(conn, sql, args=()):
    """One value, or the SQLSTATE of the error that reading it raised."""
    try:
        with conn.transaction():
            return conn.execute(sql, args).fetchone()[0]
    except psycopg.Error as e:
        return f"error {e.sqlstate}"


def snapshot(conn):
    """Every HWM a write is judged by, by logical name: per fence key, the
    state tables by table name, the floors."""
    names = aliases(conn)
    ns = namespace(conn)
    snap = {}
    for i in ROW_IDS:
        snap[f"hwm row:{i}"] = value(
            conn, "SELECT fencing_high_water(%s::regclass, jsonb_build_object('id', %s))"
            "::text::bigint", (names["row"], i))
    snap["hwm table"] = value(conn, "SELECT fencing_high_water(%s::regclass)::text::bigint",
                              (names["table"],))
    for sh in ("s1", "s2"):
        snap[f"hwm resource:{sh}"] = value(
            conn, "SELECT fencing_resource_high_water(%s, %s)::text::bigint", (sh, ns))
    for logical, physical in names.items():
        for what, sql in (
                ("table_hwm", "SELECT max(hwm) FROM fencing.table_hwm WHERE relid = %s::regclass"),
                ("tombstones", "SELECT count(*) FROM fencing.row_tombstone "
                               "WHERE relid = %s::regclass"),
                ("tombstone_floor", "SELECT max(floor) FROM fencing.tombstone_floor "
                                    "WHERE relid = %s::regclass")):
            snap[f"{what} {logical}"] = value(conn, sql, (physical,))
    for r, h in conn.execute("SELECT resource, hwm FROM fencing.resource_hwm WHERE namespace = %s",
                             (ns,)).fetchall():
        snap[f"resource_hwm {r}"] = h
    snap["resource_floor"] = value(
        conn, "SELECT max(floor) FROM fencing.resource_floor WHERE namespace = %s", (ns,))
    return snap


def lower(before, after):
    """AFTER is lower than BEFORE, or no longer readable."""
    if before is None or isinstance(before, str):
        return False
    return after is None or isinstance(after, str) or after < before


def policies(conn):
    names = aliases(conn)
    out = {}
    for logical, physical in names.items():
        out[logical] = conn.execute(
            "SELECT token_column::text, scope, resource_column::text, resource_namespace, "
            "require_token, guard_ok FROM fencing_protected WHERE table_name = %s::regclass",
            (physical,)).fetchone()
    return out


# ------------------------------------------------------------------ the checker
class Checker:
    def __init__(self, conn, writers):
        self.conn = conn
        self.writers = writers
        self.before = None
        self.policy_before = None
        self.resets_before = None
        self.errors_seen = 0
        self.checked_n = {}

    def begin(self):
        """The snapshot before a migration (writers may be running: HWMs only rise)."""
        self.before = snapshot(self.conn)
        self.policy_before = policies(self.conn)
        self.resets_before = self.conn.execute("SELECT count(*) FROM fencing.reset_log").fetchone()[0]

    def check(self, label, tables=("row", "table", "resource")):
        """Pauses the writers and asserts the invariants after migration LABEL."""
        self.writers.pause()
        try:
            self.check_paused(label, tables)
        except Exception as e:  # a checker that cannot run is a failure, not a crash
            report(False, f"{label}: the checker ran: {type(e).__name__}: {e}")
        self.writers.resume()

    def check_paused(self, label, tables):
        conn = self.conn
        after = snapshot(conn)
        lowered = [f"{k}: {v} -> {after.get(k)}" for k, v in self.before.items()
                   if lower(v, after.get(k)) and not k.startswith("tombstones")]
        # Tombstones may go when their key is re-inserted (the row then holds the HWM);
        # the per-key HWMs above catch a lost one.
        report(not lowered, f"{label}: no HWM, tombstone or floor lowered"
               + (f" ({'; '.join(lowered[:4])})" if lowered else ""))
        pol = policies(conn)
        changed = [f"{t}: {self.policy_before[t]} -> {pol[t]}" for t in tables
                   if pol[t] != self.policy_before[t] or pol[t] is None or not pol[t][5]]
        report(not changed, f"{label}: every table keeps its policy and its guards"
               + (f" ({'; '.join(changed)})" if changed else ""))
        resets = conn.execute("SELECT count(*) FROM fencing.reset_log").fetchone()[0]
        report(resets == self.resets_before,
               f"{label}: nothing lowered through fencing_reset ({resets - self.resets_before} "
               "entries in fencing.reset_log)")

        hist = conn.execute("SELECT k, n, token, rk, op, val FROM mig.hist ORDER BY k, n").fetchall()
        by_key = {}
        for k, n, token, rk, op, val in hist:
            by_key.setdefault(k, []).append((n, token, rk, op, val))
        # Counted among the writes committed since the previous check.
        stale = []
        for k, seq in by_key.items():
            stale += [f"{k} n={b[0]}: {b[1]} after {a[1]}" for a, b in zip(seq, seq[1:])
                      if b[1] < a[1] and b[0] > self.checked_n.get(k, 0)]
        new = sum(1 for k, seq in by_key.items() for x in seq if x[0] > self.checked_n.get(k, 0))
        self.checked_n = {k: seq[-1][0] for k, seq in by_key.items()}
        report(not stale, f"{label}: stale accepted = {len(stale)} of {new} writes committed "
               "since the last check (tokens never decrease per fence key in commit order)"
               + (f" {stale[:3]}" if stale else ""))
        acked, errors = self.writers.acknowledged()
        errors, self.errors_seen = errors[self.errors_seen:], len(errors)
        have = {(k, n): token for k, n, token, *_ in hist}
        lost = [a for a in acked if have.get((a[0], a[1])) != a[2]]
        # Each row's value is its last committed write's.
        last = {}
        for k, seq in by_key.items():
            for n, token, rk, op, val in seq:
                last[rk] = (op, val)
        names = aliases(conn)
        for rk, (op, val) in last.items():
            logical, i = rk.split(":")
            got = conn.execute(f"SELECT v FROM {names[logical]} WHERE id = %s", (int(i),)).fetchone()
            if op == "delete" and got is not None:
                lost.append(f"{rk}: deleted, but holds {got[0]}")
            elif op != "delete" and (got is None or got[0] != val):
                lost.append(f"{rk}: last write {val}, holds {got and got[0]}")
        report(not lost, f"{label}: acknowledged writes lost = {len(lost)} of {len(acked)}"
               + (f" {lost[:3]}" if lost else ""))
        report(not errors, f"{label}: every writer error was a refusal or a retry"
               + (f" {errors[:3]}" if errors else ""))
        # The HWM of every fence key is at least its largest committed token.
        low = []
        for k, seq in by_key.items():
            top = max(t for _, t, *_ in seq)
            h = after.get(f"hwm {k}")
            if lower(top, h):
                low.append(f"{k}: HWM {h} < committed {top}")
        report(not low, f"{label}: every fence key's HWM >= its largest committed token"
               + (f" {low[:3]}" if low else ""))
        self.probe(label, by_key, names)

    def probe(self, label, by_key, names):
        """A stale write per fence key (highest committed - 1) is refused."""
        bad = []
        for k, seq in by_key.items():
            token = max(t for _, t, *_ in seq) - 1
            rk = seq[-1][2]
            logical, i = rk.split(":")
            t = names[logical]
            got = self.attempt(t, int(i), token)
            if got != "TF001":
                bad.append(f"{k}: token {token}: {got}")
        # A token-less write is refused too (TF002; a deleted key's re-insert as well).
        for logical in ("row", "table", "resource"):
            got = self.attempt(names[logical], 1, None)
            if got != "TF002":
                bad.append(f"{logical}: without a token: {got}")
        report(not bad, f"{label}: a stale write (highest committed token - 1) and a token-less "
               "write are refused for every fence key" + (f" {bad[:3]}" if bad else ""))


    def attempt(self, t, i, token):
        """Writes row I of T (an INSERT when the key is deleted) with TOKEN
        (None: none), rolled back; returns the SQLSTATE or "accepted"."""
        exists = self.conn.execute(f"SELECT 1 FROM {t} WHERE id = %s", (i,)).fetchone()
        sql = (f"UPDATE {t} SET v = -1 WHERE id = {i}" if exists else
               f"INSERT INTO {t} (id, v) VALUES ({i}, -1)")
        try:
            with self.conn.transaction():
                if token is not None:
                    self.conn.execute("SELECT set_config('fencing.token', %s, true)",
                                      (str(token),))
                self.conn.execute(sql)
                raise Accepted()
        except Accepted:
            return f"accepted by {sql.split(' SET')[0].split(' (')[0]}"
        except psycopg.Error as e:
            return e.sqlstate


class Accepted(Exception):
    pass
