#!/usr/bin/python3
"""Takeover times: how long a successor's fencing_acquire takes while its
predecessor, whose lease has expired, is paused
  before   inside its transaction, before its first write;
  inside   inside its first write (an AFTER ROW trigger sleeps: the write was
           admitted at the HWM, whose lock it holds in share mode);
  after    inside its transaction, after its first write;
  commit   inside COMMIT (a deferred constraint trigger sleeps);
for the successor's wait => 0 s, 1 s and 5 s. The holder pauses PAUSE seconds
(default 3). Each cell runs RUNS times (default 7) on a fresh resource; the
time is measured by the server around the acquire (clock_timestamp()). Prints
one TSV line per cell: scenario, wait, runs, acquired, p50, p90, max (s), and
what the holder saw.

    PGHOST=... PGPORT=... PGDATABASE=... /usr/bin/python3 test/bench/takeover.py

The database must have the extension; the script creates and drops
bench_takeover. Run it against the old and the new library for before/after
(docs/benchmarks.md).
"""
import os
import statistics
import threading
import time

import psycopg

PAUSE = float(os.environ.get("PAUSE", "3"))
RUNS = int(os.environ.get("RUNS", "7"))
TTL = 0.3


def conn():
    return psycopg.connect(autocommit=True)


def setup():
    with conn() as c:
        c.execute(f"""
            DROP TABLE IF EXISTS bench_takeover;
            CREATE TABLE bench_takeover (res text PRIMARY KEY, val int NOT NULL, fence fencing_token);
            SELECT fencing_protect('bench_takeover', scope => 'resource', resource_column => 'res',
                                   resource_namespace => 'bench_takeover');
            CREATE OR REPLACE FUNCTION bench_takeover_sleep() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_sleep({PAUSE}); RETURN NULL; END $$;
            CREATE TRIGGER inside AFTER UPDATE ON bench_takeover FOR EACH ROW WHEN (NEW.val = -7)
                EXECUTE FUNCTION bench_takeover_sleep();
            CREATE CONSTRAINT TRIGGER at_commit AFTER UPDATE ON bench_takeover DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.val = -1) EXECUTE FUNCTION bench_takeover_sleep();
        """)


def holder(scenario, res, token, started, seen):
    try:
        with conn() as h:
            h.execute("BEGIN")
            h.execute(f"SET LOCAL fencing.token = {token}")
            if scenario in ("after", "commit", "inside"):
                val = {"after": 1, "commit": -1, "inside": -7}[scenario]
                started.set() if scenario == "inside" else None
                h.execute("UPDATE bench_takeover SET val = %s WHERE res = %s", (val, res))
            started.set()
            if scenario in ("before", "after"):
                time.sleep(PAUSE)
            if scenario == "before":
                h.execute("UPDATE bench_takeover SET val = 1 WHERE res = %s", (res,))
            h.execute("COMMIT")
            seen.append("committed")
    except psycopg.Error as e:
        seen.append(e.sqlstate or type(e).__name__)
    finally:
        started.set()


def one(scenario, wait, k):
    res = f"{scenario}-{wait}-{k}-{time.monotonic_ns()}"
    with conn() as c:
        c.execute("BEGIN")
        token = c.execute("SELECT fencing_acquire(%s, 'h', %s::interval, namespace => 'bench_takeover')",
                          (res, f"{TTL} s")).fetchone()[0]
        c.execute(f"SET LOCAL fencing.token = {token}")
        c.execute("INSERT INTO bench_takeover VALUES (%s, 0)", (res,))
        c.execute("COMMIT")
        acquired_at = time.monotonic()
        started, seen = threading.Event(), []
        t = threading.Thread(target=holder, args=(scenario, res, token, started, seen))
        t.start()
        started.wait()
        time.sleep(max(0.0, acquired_at + TTL + 0.1 - time.monotonic()) + 0.1)  # lease expired
        got, took = c.execute(
            "SELECT fencing_acquire(%s, 's', '1 min', wait => %s::interval, namespace => 'bench_takeover'),"
            "       extract(epoch FROM clock_timestamp() - statement_timestamp())::float8",
            (res, f"{wait} s")).fetchone()
        t.join()
    return got is not None, took, seen[0] if seen else "?"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def main():
    setup()
    print("scenario\twait_s\truns\tacquired\tp50_s\tp90_s\tmax_s\tholder_outcomes")
    for scenario in ("before", "inside", "after", "commit"):
        for wait in (0, 1, 5):
            rs = [one(scenario, wait, k) for k in range(RUNS)]
            times = [r[1] for r in rs]
            outcomes = {}
            for r in rs:
                outcomes[r[2]] = outcomes.get(r[2], 0) + 1
            print(f"{scenario}\t{wait}\t{RUNS}\t{sum(r[0] for r in rs)}\t{pct(times, .5):.3f}\t{pct(times, .9):.3f}"
                  f"\t{max(times):.3f}\t{outcomes}", flush=True)
    with conn() as c:
        c.execute("DROP TABLE bench_takeover; DROP FUNCTION bench_takeover_sleep()")


if __name__ == "__main__":
    main()
