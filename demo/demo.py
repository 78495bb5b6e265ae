#!/usr/bin/python3
"""make demo: the seeds' story with real processes (run by test/demo.sh, which
starts the scratch PostgreSQL cluster and exports its libpq environment).

Starts etcd on loopback, then tells the story twice: without fencing (a lost
update) and with fencing. Client A takes an etcd lock, reads, and is paused
with SIGSTOP while it processes its order; its lease expires; client B takes
the lock, fences A, reads and writes; A wakes up and writes with its old token.
"""
import os
import sys

import psycopg

import fencing_story as story
import services

TTY = sys.stdout.isatty()
TTL = 2


def paint(code, text):
    return f"\033[{code}m{text}\033[0m" if TTY else text


BOLD, RED, GREEN = "1", "1;31", "1;32"
CLIENT = {"A": ("  A | ", "33"), "B": ("                B | ", "36")}


class Narrator:
    def __init__(self, section):
        self.section, self.step = section, 0

    def __call__(self, text):
        self.step += 1
        print(paint(BOLD, f"[{self.section}.{self.step}] {text}"), flush=True)


def heading(text):
    print()
    print(paint(BOLD, f"=== {text} ==="), flush=True)


def show_event(fenced):
    def show(who, ev):
        prefix, colour = CLIENT[who]
        say = lambda text, c=colour: print(paint(c, prefix + text), flush=True)  # noqa: E731
        kind = ev["event"]
        if kind == "acquired":
            say(f"took the etcd lock /locks/{story.ITEM} (lease {TTL} s): token {ev['token']}, the put's revision")
        elif kind == "advanced":
            say(f"fencing_resource_advance('{story.ITEM}', {ev['token']}, '{story.NAMESPACE}') -> {ev['ok']}: "
                "every lower token is fenced before I read")
        elif kind == "advance_missing":
            say("fencing_resource_advance() is not installed in this build; skipping the advance "
                f"({ev['error']})", RED)
        elif kind == "read":
            say(f"read stock = {ev['stock']}")
        elif kind == "wrote":
            if fenced:
                verdict = ("1 row: written" if ev["rows"] == 1
                           else "0 rows: REFUSED, my token is below the high-water mark")
                say(f"fenced_update('inventory', {ev['token']}, {{item}}, {{\"stock\": {ev['stock']}}}) -> {verdict}",
                    colour if ev["rows"] == 1 else RED)
            else:
                say(f"UPDATE inventory_unfenced SET stock = {ev['stock']} -> {ev['rows']} row: written")
        elif kind == "transparent":
            if ev["sqlstate"] == "00000":
                say("the same write in transparent mode was accepted", RED)
            else:
                say("the same write as plain UPDATE under SET LOCAL fencing.token:", RED)
                say(f"  ERROR:  {ev['error']}  (SQLSTATE {ev['sqlstate']})", RED)
                say(f"  DETAIL: {ev['detail']}", RED)
                say(f"  HINT:   {ev['hint']}", RED)
        elif kind == "released":
            say("released the lock")
        elif kind == "retrying":
            say("does what the HINT says: re-acquire the lock, re-read, write again")
        elif kind == "output":
            say(ev["line"])
    return show


def show_table(conn, sql, params=()):
    cur = conn.execute(sql, params)
    names = [d.name for d in cur.description]
    rows = [[str(v) for v in r] for r in cur.fetchall()]
    widths = [max(len(x) for x in col) for col in zip(names, *rows)]
    print("    " + " | ".join(n.ljust(w) for n, w in zip(names, widths)))
    print("    " + "-+-".join("-" * w for w in widths))
    for r in rows:
        print("    " + " | ".join(v.ljust(w) for v, w in zip(r, widths)))
    print(flush=True)


def main():
    conn = psycopg.connect(autocommit=True)
    db = conn.info.dbname
    print(paint(BOLD, "fencing demo: the paused lock holder, with real processes"))
    print("Stock of SKU-001 is 10. Clients A and B each process one order (stock - 1) under an etcd lock.")
    print("Expected final stock: 8. A's lines are on the left, B's indented.")
    with services.Etcd() as etcd:
        import etcd3
        version = etcd3.client(host="127.0.0.1", port=etcd.port).status().version
        print(f"etcd {version} on {etcd.endpoint} (data in {etcd.dir}); "
              f"PostgreSQL {conn.info.parameter_status('server_version')} on port {conn.info.port}", flush=True)
        story.setup_tables(conn)

        heading("1. Without fencing: the paused holder overwrites the new holder's work")
        story.run_story("etcd", etcd.endpoint, db, fenced=False, ttl=TTL,
                        narrate=Narrator(1), on_event=show_event(False))
        print(paint(BOLD, "[1.*] Final state: two orders processed, one lost:"))
        show_table(conn, "SELECT item, stock FROM inventory_unfenced")

        heading("2. With fencing: the table is fenced, every write carries its lock's token")
        show_table(conn, "SELECT table_name, token_column, scope, resource_column, resource_namespace"
                         " FROM fencing_protected")
        out = story.run_story("etcd", etcd.endpoint, db, fenced=True, retry=True, ttl=TTL,
                              narrate=Narrator(2), on_event=show_event(True))
        print(paint(BOLD, "[2.*] Final state: both orders, nothing lost; the high-water mark is A's new token:"))
        show_table(conn, "SELECT item, stock, fence, fencing_resource_high_water(item, %s) AS high_water_mark"
                         " FROM inventory", (story.NAMESPACE,))
        stale = out["A"]["writes"][0] == 0

    heading("3. Tokens are opaque, ordered values; ZooKeeper zxids read as hex (epoch<<32 | counter)")
    show_table(conn, "SELECT '34'::fencing_token < '0x100000022'::fencing_token AS zxid_is_newer,"
                     " fencing_token_epoch('0x100000022') AS epoch, fencing_token_counter('0x100000022') AS counter")
    lost = conn.execute("SELECT stock FROM inventory_unfenced").fetchone()[0]
    kept = conn.execute("SELECT stock FROM inventory").fetchone()[0]
    print(paint(BOLD, "Summary: ") + f"without fencing the stock ends at {lost} (an order lost); "
          f"with fencing at {kept}: A's stale write was " + (paint(GREEN, "refused") if stale else paint(RED, "ACCEPTED")))
    conn.close()
    return 0 if stale and kept == 8 else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
