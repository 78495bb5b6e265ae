#!/usr/bin/python3
"""Tokens bound by psycopg 3 the way it binds Python ints: a small int goes out
as smallint, a mid-sized one as integer or bigint, a huge one as numeric. Each
must work as a token column value and as a fenced_update() argument, with no
casts in the SQL. Prints "ok N - ..." / "not ok N - ..." lines and a summary.

Connection from the libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE).
"""
import sys

import psycopg

results = []


def check(name, expected, actual):
    ok = expected == actual
    results.append(ok)
    n = len(results)
    print(f"{'ok' if ok else 'not ok'} {n} - {name}" + ("" if ok else f": expected {expected!r}, got {actual!r}"))


def sqlstate_of(conn, sql, params):
    try:
        with conn.transaction():
            conn.execute(sql, params)
        return "00000"
    except psycopg.Error as e:
        return e.sqlstate


with psycopg.connect("", autocommit=True) as conn:
    conn.execute("CREATE EXTENSION IF NOT EXISTS fencing")
    conn.execute("DROP TABLE IF EXISTS drivers_inventory")
    conn.execute("CREATE TABLE drivers_inventory (item text PRIMARY KEY, stock int, fence fencing_token)")
    # psycopg picks the parameter type from the value: 34 is sent as int2.
    conn.execute("INSERT INTO drivers_inventory VALUES (%s, %s, %s)", ("a", 10, 34))
    check("smallint-bound token inserted", 34,
          conn.execute("SELECT fence::bigint FROM drivers_inventory").fetchone()[0])
    conn.execute("UPDATE drivers_inventory SET fence = %s WHERE item = %s", (35, "a"))
    check("smallint-bound token in UPDATE ... SET", 35,
          conn.execute("SELECT fence::bigint FROM drivers_inventory").fetchone()[0])
    n = conn.execute("SELECT fenced_update('drivers_inventory', %s, %s, %s)",
                     (36, psycopg.types.json.Jsonb({"item": "a"}),
                      psycopg.types.json.Jsonb({"stock": 9}))).fetchone()[0]
    check("smallint-bound token in fenced_update()", 1, n)
    n = conn.execute("SELECT fenced_update('drivers_inventory', %s, %s, %s)",
                     (70000, psycopg.types.json.Jsonb({"item": "a"}),
                      psycopg.types.json.Jsonb({"stock": 8}))).fetchone()[0]
    check("integer-bound token in fenced_update()", 1, n)
    big = 2**40
    n = conn.execute("SELECT fenced_update('drivers_inventory', %s, %s, %s)",
                     (big, psycopg.types.json.Jsonb({"item": "a"}),
                      psycopg.types.json.Jsonb({"stock": 7}))).fetchone()[0]
    check("bigint-bound token in fenced_update()", 1, n)
    top = 2**63 - 1  # beyond int8's Python range check, psycopg sends numeric
    conn.execute("UPDATE drivers_inventory SET fence = %s WHERE item = %s", (top, "a"))
    check("largest token round-trips without loss", top,
          int(conn.execute("SELECT fence::text FROM drivers_inventory").fetchone()[0]))
    n = conn.execute("SELECT fenced_update('drivers_inventory', %s, %s, %s)",
                     (35, psycopg.types.json.Jsonb({"item": "a"}),
                      psycopg.types.json.Jsonb({"stock": 1}))).fetchone()[0]
    check("stale smallint-bound token gets 0 rows", 0, n)
    check("stale token in UPDATE raises TF001", "TF001",
          sqlstate_of(conn, "UPDATE drivers_inventory SET fence = %s WHERE item = %s", (35, "a")))
    check("token above the range raises 22003", "22003",
          sqlstate_of(conn, "UPDATE drivers_inventory SET fence = %s WHERE item = %s", (2**63, "a")))
    check("negative token raises 22003", "22003",
          sqlstate_of(conn, "UPDATE drivers_inventory SET fence = %s WHERE item = %s", (-1, "a")))
    conn.execute("DROP TABLE drivers_inventory")

failed = results.count(False)
print(f"{len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
