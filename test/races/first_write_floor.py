#!/usr/bin/python3
"""A key's first write racing the retirement of its old entry, in the one
window no isolation spec can reach: the writer's snapshot predates the key's
last write (REPEATABLE READ), so its entry reads find nothing; it is then held
by gdb at the start of its floor read (fencing::pg::ResourceFloor) while a
retirement deletes the key's entry, raises the floor and, once the writer's
INSERT waits for it, commits. The writer must end refused (or with a
serialization failure), the key must stay judged at the floor, and a write
with a token below the floor must be refused. One run per kind of first
write that reaches the floor read there: fencing_resource_advance and
fencing_acquire. (A fenced INSERT or UPDATE does not: its direct read of the
entry, with the latest snapshot, finds the key's HWM and refuses first.)

Connection from the libpq environment; run as root (gdb attaches to the
server's backend). Prints "ok N - ..." / "not ok N - ..." lines.
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

import psycopg

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'ok' if ok else 'not ok'} {len(results)} - {name}" + ("" if ok else f": {detail}"),
          flush=True)


def connect():
    return psycopg.connect("", autocommit=True)


def run(kind, ns, scratch):
    setup = connect()
    setup.execute("CREATE EXTENSION IF NOT EXISTS fencing")
    setup.execute(f"DROP TABLE IF EXISTS race_{kind}")
    setup.execute(f"CREATE TABLE race_{kind} (id text PRIMARY KEY, state text, fence fencing_token)")
    setup.execute("SELECT fencing_protect(%s, scope => 'resource', resource_column => 'id',"
                  " resource_namespace => %s)", (f"race_{kind}", ns))
    setup.execute("SELECT fencing_enable_retirement(%s)", (ns,))
    hit, go = os.path.join(scratch, f"{kind}.hit"), os.path.join(scratch, f"{kind}.go")

    writer = connect()
    pid = writer.execute("SELECT pg_backend_pid()").fetchone()[0]
    # Load the library in the writer's backend before gdb sets its breakpoint.
    writer.execute("SELECT fencing_resource_high_water('none', %s)", (ns,))
    writer.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    writer.execute("SELECT 1")  # the writer's snapshot: key k absent
    other = connect()
    with other.transaction():
        other.execute("SET LOCAL fencing.token = 10")
        other.execute(f"INSERT INTO race_{kind} VALUES ('k', 'written with 10')")
    gdb = subprocess.Popen(
        ["gdb", "-q", "-p", str(pid), "-batch", "-ex", "set breakpoint pending on",
         "-ex", "break fencing::pg::ResourceFloor", "-ex", "continue",
         "-ex", f"shell touch {hit}", "-ex", f"shell while [ ! -e {go} ]; do sleep 0.05; done",
         "-ex", "detach"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)  # gdb attached, breakpoint set, the backend running again
    outcome = {}

    def write():
        try:
            if kind == "advance":
                outcome["result"] = writer.execute(
                    "SELECT fencing_resource_advance('k', 5, %s)", (ns,)).fetchone()[0]
            elif kind == "acquire":
                outcome["result"] = writer.execute(
                    "SELECT fencing_acquire('k', 'w', '1 min', namespace => %s)::bigint",
                    (ns,)).fetchone()[0]
            writer.execute("COMMIT")
        except psycopg.Error as e:
            outcome["error"] = e.sqlstate
            writer.execute("ROLLBACK")

    thread = threading.Thread(target=write)
    thread.start()
    deadline = time.time() + 30
    while not os.path.exists(hit) and time.time() < deadline:
        time.sleep(0.05)
    check(f"{kind}: the writer reached its floor read", os.path.exists(hit))
    retirer = connect()
    retirer.execute("BEGIN")
    retired = retirer.execute("SELECT fencing_retire(%s, '0 s')", (ns,)).fetchone()[0]
    check(f"{kind}: the retirement took the key's entry (uncommitted)", retired >= 1, retired)
    open(go, "w").close()
    time.sleep(1.5)  # the writer's INSERT now waits for the retirement
    retirer.execute("COMMIT")
    thread.join(30)
    try:
        gdb.wait(30)
    except subprocess.TimeoutExpired:
        gdb.kill()
    refused = {"advance": outcome.get("result") is False,
               "acquire": isinstance(outcome.get("result"), int) and outcome["result"] > 10}[kind]
    if outcome.get("error") == "40001":
        refused = True
    check(f"{kind}: the writer was refused or issued above the floor", refused, outcome)
    own = setup.execute("SELECT hwm FROM fencing.resource_hwm WHERE namespace = %s AND resource = 'k'",
                        (ns,)).fetchone()
    effective = setup.execute("SELECT fencing_resource_high_water('k', %s)::bigint",
                              (ns,)).fetchone()[0]
    check(f"{kind}: the key stays judged at 10 or above", effective >= 10,
          f"own entry {own}, effective {effective}")
    try:
        with setup.transaction():
            setup.execute("SET LOCAL fencing.token = 6")
            setup.execute(f"UPDATE race_{kind} SET state = 'stale 6' WHERE id = 'k'")
        state = "00000"
    except psycopg.Error as e:
        state = e.sqlstate
    check(f"{kind}: a write with token 6 is refused", state == "TF001", state)
    for c in (writer, other, retirer, setup):
        c.close()


with tempfile.TemporaryDirectory() as scratch:
    for kind in ("advance", "acquire"):
        run(kind, f"race_{kind}_{os.getpid()}", scratch)
failed = results.count(False)
print(f"# {len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
