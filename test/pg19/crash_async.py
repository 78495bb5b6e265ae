#!/usr/bin/python3
"""kill -9 under synchronous_commit = off: every acknowledged raise survives.

Writers, each on its own connection with synchronous_commit = off for the
session (and the server's default off too), raise an HWM of a key of their
own with rising tokens, by every raising path: fencing_resource_advance,
fencing_acquire, a row-scope UPDATE (token column), the same with SET LOCAL
fencing.token, a DELETE / re-INSERT (tombstone), resource and table scope
INSERTs, fenced_upsert, INSERT ... ON CONFLICT DO UPDATE, a raise in a
released savepoint, and a raise followed by SET LOCAL synchronous_commit =
off in the same transaction. A writer notes a token as acknowledged only
when its COMMIT (or autocommit statement) has returned. Then a SIGKILL,
alternately of the postmaster (restarted by CRASH_RESTART) and of one backend
(the postmaster's crash recovery restarts the rest). After recovery, per key:
the HWM is at least the last acknowledged token, and that token minus one is
refused (TF001; fencing_resource_advance returns false); a lease acquired after recovery is above every acknowledged
lease token. A control writer on an unfenced table under the same settings
counts acknowledged commits lost, to show the crash does lose unflushed
commits (the harness can see a loss).

Environment: the libpq variables; CRASH_PIDFILE (postmaster.pid),
CRASH_RESTART (a shell command starting the server again), CRASH_CYCLES
(default 10). Prints "ok N - ..." lines; exits non-zero on a failure.
"""
import os
import random
import signal
import subprocess
import sys
import threading
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import tap  # noqa: E402

CYCLES = int(os.environ.get("CRASH_CYCLES", "10"))


def check(desc, ok, detail=""):
    tap.report(ok, f"{desc}: {detail}" if not ok and detail else desc)


def connect():
    for _ in range(600):
        try:
            c = psycopg.connect(autocommit=True, connect_timeout=5)
            c.execute("SET synchronous_commit = off")
            return c
        except psycopg.OperationalError:
            time.sleep(0.1)
    raise SystemExit("server did not come back")


SETUP = """
CREATE EXTENSION IF NOT EXISTS fencing;
CREATE TABLE cr_row (id int PRIMARY KEY, v int, fence fencing_token);
INSERT INTO cr_row SELECT g, 0, 1 FROM generate_series(1, 10) g;
CREATE TABLE cr_res (id bigserial PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('cr_res', scope => 'resource', resource_column => 'shard', resource_namespace => 'cr');
CREATE TABLE cr_tab (id bigserial PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('cr_tab', scope => 'table');
CREATE TABLE cr_up (id int PRIMARY KEY, v int, fence fencing_token);
INSERT INTO cr_up VALUES (1, 0, 1), (2, 0, 1);
CREATE TABLE cr_plain (id bigserial PRIMARY KEY, n bigint);
"""

# name -> (statements with {t}, HWM query, stale probe with {t})
WRITERS = {
    "advance": (["SELECT fencing_resource_advance('cr-adv', {t})"],
                "SELECT fencing_resource_high_water('cr-adv')",
                "SELECT fencing_resource_advance('cr-adv', {t})::text"),
    "row": (["UPDATE cr_row SET v = v + 1, fence = {t} WHERE id = 1"],
            "SELECT fencing_high_water('cr_row', '{{\"id\": 1}}')",
            "UPDATE cr_row SET fence = {t} WHERE id = 1"),
    "row-setting": (["BEGIN", "SET LOCAL fencing.token = {t}", "UPDATE cr_row SET v = v + 1 WHERE id = 2", "COMMIT"],
                    "SELECT fencing_high_water('cr_row', '{{\"id\": 2}}')",
                    "UPDATE cr_row SET fence = {t} WHERE id = 2"),
    "tombstone": (["BEGIN", "SET LOCAL fencing.token = {t}", "DELETE FROM cr_row WHERE id = 3", "COMMIT",
                   "INSERT INTO cr_row VALUES (3, 0, {t1})", "BEGIN",
                   "SET LOCAL fencing.token = {t2}", "DELETE FROM cr_row WHERE id = 3", "COMMIT"],
                  "SELECT fencing_high_water('cr_row', '{{\"id\": 3}}')",
                  "INSERT INTO cr_row VALUES (3, 0, {t}) ON CONFLICT (id) DO UPDATE SET fence = excluded.fence"),
    "resource": (["INSERT INTO cr_res (shard, fence) VALUES ('s1', {t})"],
                 "SELECT fencing_high_water('cr_res', '{{\"shard\": \"s1\"}}')",
                 "INSERT INTO cr_res (shard, fence) VALUES ('s1', {t})"),
    "table": (["INSERT INTO cr_tab (fence) VALUES ({t})"], "SELECT fencing_high_water('cr_tab')",
              "INSERT INTO cr_tab (fence) VALUES ({t})"),
    "fenced_upsert": (["SELECT fenced_upsert('cr_up', {t}, '{{\"id\": 1, \"v\": 1}}')"],
                      "SELECT fencing_high_water('cr_up', '{{\"id\": 1}}')",
                      "UPDATE cr_up SET fence = {t} WHERE id = 1"),
    "on_conflict_update": (["INSERT INTO cr_up VALUES (2, 0, {t}) ON CONFLICT (id) DO UPDATE "
                            "SET v = cr_up.v + 1, fence = excluded.fence"],
                           "SELECT fencing_high_water('cr_up', '{{\"id\": 2}}')",
                           "UPDATE cr_up SET fence = {t} WHERE id = 2"),
    "savepoint": (["BEGIN", "SAVEPOINT a", "UPDATE cr_row SET fence = {t} WHERE id = 4", "RELEASE a", "COMMIT"],
                  "SELECT fencing_high_water('cr_row', '{{\"id\": 4}}')",
                  "UPDATE cr_row SET fence = {t} WHERE id = 4"),
    "set-local-off-after": (["BEGIN", "UPDATE cr_row SET fence = {t} WHERE id = 5",
                             "SET LOCAL synchronous_commit = off", "COMMIT"],
                            "SELECT fencing_high_water('cr_row', '{{\"id\": 5}}')",
                            "UPDATE cr_row SET fence = {t} WHERE id = 5"),
}
# The last token each acknowledged write raised to (tombstone: t + 2).
RAISED = {"tombstone": 2}

acked = {}       # writer -> last acknowledged token
lease_acked = []  # acknowledged lease tokens
plain_acked = [0]
pids = {}
stop = threading.Event()
base = [1000]


def writer(name):
    stmts = WRITERS[name][0]
    t = base[0]
    try:
        c = connect()
        pids[name] = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        while not stop.is_set():
            t += random.randint(1, 3) + RAISED.get(name, 0)
            for s in stmts:
                c.execute(s.format(t=t, t1=t + 1, t2=t + 2))
            acked[name] = t + RAISED.get(name, 0)
    except psycopg.Error:
        pass  # the crash


def leaser():
    try:
        c = connect()
        pids["lease"] = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        while not stop.is_set():
            tok = c.execute("SELECT fencing_acquire('cr-lease', 'h' || random(), '2 s', wait => '5 s')").fetchone()[0]
            if tok is not None:
                lease_acked.append(int(tok))
                c.execute("SELECT fencing_release('cr-lease', %s)", (tok,))
    except psycopg.Error:
        pass


def plain():
    try:
        c = connect()
        pids["plain"] = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        while not stop.is_set():
            plain_acked[0] = c.execute("INSERT INTO cr_plain (n) VALUES (1) RETURNING id").fetchone()[0]
    except psycopg.Error:
        pass


def sqlstate(c, sql):
    try:
        c.execute("BEGIN")
        cur = c.execute(sql)
        row = cur.fetchone() if sql.startswith("SELECT") else None
        c.execute("ROLLBACK")
        return "ok" if row is None else f"ok:{row[0]}"
    except psycopg.Error as e:
        c.execute("ROLLBACK")
        return e.sqlstate


def main():
    db = os.environ.get("PGDATABASE", "postgres")
    setup = connect()
    setup.execute("DROP DATABASE IF EXISTS crash_async")
    setup.execute("CREATE DATABASE crash_async")
    setup.close()
    os.environ["PGDATABASE"] = "crash_async"
    admin = connect()
    admin.execute(SETUP)
    total_acked = 0
    lost_plain = 0
    lost = 0
    for cycle in range(1, CYCLES + 1):
        stop.clear()
        acked.clear()
        pids.clear()
        threads = [threading.Thread(target=writer, args=(w,)) for w in WRITERS]
        threads += [threading.Thread(target=leaser), threading.Thread(target=plain)]
        for th in threads:
            th.start()
        deadline = time.time() + 60
        while time.time() < deadline and (len(acked) < len(WRITERS) or not lease_acked):
            time.sleep(0.05)
        time.sleep(random.uniform(0.2, 1.0))
        postmaster = cycle % 2 == 1
        if postmaster:
            with open(os.environ["CRASH_PIDFILE"]) as f:
                os.kill(int(f.readline()), signal.SIGKILL)
            victim = "postmaster"
        else:
            victim = random.choice(list(pids))
            os.kill(pids[victim], signal.SIGKILL)
        stop.set()
        for th in threads:
            th.join()
        snapshot = dict(acked)
        if postmaster:
            with open(os.environ["CRASH_PIDFILE"]) as f:
                pm = f.readline().strip()
            for _ in range(100):  # until the killed postmaster is reaped
                if not os.path.exists(f"/proc/{pm}"):
                    break
                time.sleep(0.1)
            subprocess.run(os.environ["CRASH_RESTART"], shell=True, check=True)
        c = connect()
        missing = [w for w in WRITERS if w not in snapshot]
        check(f"cycle {cycle} (kill -9 of {victim}): every writer acknowledged a raise before the kill",
              not missing, ", ".join(missing))
        bad = []
        for w, (_, hwm_sql, probe) in WRITERS.items():
            if w not in snapshot:
                continue
            total_acked += 1
            hwm = c.execute(hwm_sql.format()).fetchone()[0]
            if hwm is None or int(hwm) < snapshot[w]:
                bad.append(f"{w}: acknowledged {snapshot[w]}, HWM {hwm}")
                lost += 1
            st = sqlstate(c, probe.format(t=snapshot[w] - 1))
            if st != ("ok:false" if w == "advance" else "TF001"):
                bad.append(f"{w}: token {snapshot[w] - 1} gave {st}")
        check(f"cycle {cycle}: every acknowledged raise survived and its token - 1 is refused", not bad, "; ".join(bad))
        top = c.execute("SELECT fencing_acquire('cr-lease', 'after', '2 s', wait => '10 s')").fetchone()[0]
        check(f"cycle {cycle}: the first lease after recovery ({top}) is above every acknowledged one "
              f"({max(lease_acked)})", top is not None and int(top) > max(lease_acked))
        c.execute("SELECT fencing_release('cr-lease', %s)", (top,))
        have = c.execute("SELECT coalesce(max(id), 0) FROM cr_plain").fetchone()[0]
        if have < plain_acked[0]:
            lost_plain += 1
        base[0] = max([base[0]] + list(snapshot.values())) + 10
    check(f"{total_acked} acknowledged raises checked, {lost} lost", lost == 0)
    check(f"{len(lease_acked)} lease tokens acknowledged, none twice", len(set(lease_acked)) == len(lease_acked))
    print(f"# control: an unfenced synchronous_commit = off insert lost its acknowledged commit "
          f"in {lost_plain} of {CYCLES} crashes")
    os.environ["PGDATABASE"] = db
    connect().execute("DROP DATABASE crash_async WITH (FORCE)")
    sys.exit(tap.finish())


main()
