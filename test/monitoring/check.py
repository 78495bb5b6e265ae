#!/usr/bin/python3
"""The monitoring files work: monitoring/postgres_exporter.yml is valid YAML in
postgres_exporter's custom-query form, and each of its queries runs and returns
exactly the declared columns, metrics numeric; each query of
monitoring/fencing_alerts.sql runs. Connects with the libpq environment
(PGHOST, PGPORT, ...) to the database named by argv[1] (default: PGDATABASE).
With --expect-rows, every exporter query must also return at least one row
(the TAP test runs it on a preloaded server with counters). Prints
"ok N - ..." / "not ok N - ..." lines."""
import os
import re
import sys

import psycopg
import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
expect_rows = "--expect-rows" in sys.argv
dbname = args[0] if args else os.environ.get("PGDATABASE", "postgres")

n = 0
failed = 0


def check(description, ok, why=""):
    global n, failed
    n += 1
    if ok:
        print(f"ok {n} - {description}")
    else:
        failed += 1
        print(f"not ok {n} - {description}: {why}")


with open(os.path.join(ROOT, "monitoring", "postgres_exporter.yml")) as f:
    try:
        spec = yaml.safe_load(f)
        check("postgres_exporter.yml is valid YAML", isinstance(spec, dict), "not a mapping")
    except yaml.YAMLError as e:
        check("postgres_exporter.yml is valid YAML", False, str(e))
        spec = {}

conn = psycopg.connect(dbname=dbname, autocommit=True)
for name, query in spec.items():
    shape_ok = (isinstance(query, dict) and isinstance(query.get("query"), str)
                and isinstance(query.get("metrics"), list) and
                all(isinstance(m, dict) and len(m) == 1 and
                    list(m.values())[0].get("usage") in ("LABEL", "COUNTER", "GAUGE")
                    and list(m.values())[0].get("description") for m in query["metrics"]))
    check(f"{name}: query, metrics with usage and description", shape_ok, repr(query)[:200])
    if not shape_ok:
        continue
    usage = {list(m)[0]: list(m.values())[0]["usage"] for m in query["metrics"]}
    try:
        with conn.cursor() as cur:
            cur.execute(query["query"])
            columns = [d.name for d in cur.description]
            rows = cur.fetchall()
    except psycopg.Error as e:
        check(f"{name}: runs", False, str(e).strip())
        continue
    check(f"{name}: runs", True)
    check(f"{name}: returns the declared columns", sorted(columns) == sorted(usage),
          f"{columns} vs {list(usage)}")
    bad = [(c, row[i]) for row in rows for i, c in enumerate(columns)
           if usage.get(c) in ("COUNTER", "GAUGE") and
           not isinstance(row[i], (int, float)) and
           not (row[i] is not None and hasattr(row[i], "is_finite"))]
    check(f"{name}: metrics are numbers, never NULL ({len(rows)} rows)", not bad, str(bad[:3]))
    if expect_rows:
        check(f"{name}: returns rows", len(rows) > 0, "no rows")

with open(os.path.join(ROOT, "monitoring", "fencing_alerts.sql")) as f:
    text = f.read()
blocks = re.split(r"^-- name: *(\S+) *$", text, flags=re.M)[1:]
check("fencing_alerts.sql names its queries", len(blocks) >= 2, "no '-- name:' lines")
for name, body in zip(blocks[0::2], blocks[1::2]):
    sql = "\n".join(l for l in body.splitlines() if not l.startswith("--")).strip()
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()
        check(f"fencing_alerts.sql {name}: runs", True)
    except psycopg.Error as e:
        check(f"fencing_alerts.sql {name}: runs", False, str(e).strip())

print(f"{n - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
