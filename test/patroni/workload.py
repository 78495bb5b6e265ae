#!/usr/bin/python3
"""Clients of the Patroni suite (test/patroni/run.sh), and the reader of what
they recorded.

  workload.py writer DIR          fenced writes, one raising token after another
  workload.py leaser DIR INDEX    fencing_acquire / fencing_release loops
  workload.py summary DIR [--before T] [--after T]
  workload.py verify DIR          every acknowledged INSERT is there

Clients connect through $PATRONI_DSN, a multi-host connection string with
target_session_attrs=read-write, and reconnect through it after any
connection error. They record only ACKNOWLEDGED results, one line each in
DIR/<role>-<pid>.acks, after the commit returned:

  <unix time> <kind> <key> <token>    kind: row | resource | table | lease

A write whose outcome is unknown (the connection broke before the commit
returned) is recorded as "lost", never as acknowledged, and the next write
uses a higher token. A fresh write that is refused (TF001) is recorded as
"refused": there must be none. Other errors are recorded as "error" and
retried on a new connection. Clients stop when DIR/stop exists, when their
file is gone, or after 300 s.

No client sets statement_timeout or cancels a statement: a cancelled wait for
the synchronous standby returns success with a WARNING to the client after
committing locally only, which would record an acknowledgement that the
standby may not have.
"""
import glob
import os
import sys
import time

LIFETIME = 300


class Recorder:
    def __init__(self, directory, role):
        self.directory, self.role = directory, role
        self.path = os.path.join(directory, f"{role}-{os.getpid()}.acks")
        self.file = open(self.path, "a", buffering=1)

    def ack(self, kind, key, token, started=None):
        extra = "" if started is None else f" {started:.6f}"
        self.file.write(f"{time.time():.6f} {kind} {key} {token}{extra}\n")

    def note(self, what, kind, key, token):
        self.file.write(f"{time.time():.6f} {what} {kind}:{key} {token}\n")

    def stopping(self, started):
        # A removed ack file: the run is over (its directory was cleaned up).
        return (os.path.exists(os.path.join(self.directory, "stop")) or not os.path.exists(self.path)
                or time.monotonic() - started > LIFETIME)


def connect(rec, started):
    """A read-write connection through the multi-host string, retried until
    the stop file appears."""
    import psycopg
    while not rec.stopping(started):
        try:
            conn = psycopg.connect(os.environ["PATRONI_DSN"], autocommit=True)
            conn.execute("SET client_min_messages = warning")
            return conn
        except psycopg.Error:
            time.sleep(0.2)
    return None


def run_client(rec, step):
    """Calls step(conn, i, rec) for i = 1, 2, ... on a read-write connection
    until the stop file appears; step records what was acknowledged. After an
    error the outcome is unknown ("lost", the connection broke) or the write
    was refused (TF001, which must not happen to a fresh token) or failed
    otherwise (a node turning read-only under us): a new connection, and on."""
    import psycopg
    started = time.monotonic()
    conn = None
    i = 0
    while not rec.stopping(started):
        if conn is None or conn.closed:
            conn = connect(rec, started)
            if conn is None:
                return
        i += 1
        try:
            step(conn, i, rec)
        except psycopg.Error as e:
            if isinstance(e, psycopg.OperationalError):
                what = "lost"
            else:
                what = "refused" if e.sqlstate == "TF001" else "error"
            rec.note(what, rec.role, e.sqlstate or "-", i)
            try:
                conn.close()
            except psycopg.Error:
                pass
        time.sleep(0.01)


def write_step(conn, i, rec):
    """Tokens strictly increase across every scope, so each write must be
    admitted: row scope (fenced_update, plain UPDATE with the token), resource
    scope (transparent mode INSERT, fencing_resource_advance), table scope
    (plain INSERT with the token)."""
    token = 1000 + i
    op = i % 5
    if op == 0:
        kind, key = "row", "a"
        ok = conn.execute("SELECT fenced_update('inv', %s, '{\"item\": \"a\"}', jsonb_build_object('stock', %s))",
                          (token, i)).fetchone()[0] == 1
    elif op == 1:
        kind, key = "row", "b"
        ok = conn.execute("UPDATE inv SET stock = %s, fence = %s WHERE item = 'b'", (i, token)).rowcount == 1
    elif op == 2:
        kind, key = "resource", "s1"
        with conn.transaction():
            conn.execute("SELECT set_config('fencing.token', %s, true)", (str(token),))
            conn.execute("INSERT INTO orders (shard, n) VALUES ('s1', %s)", (i,))
        ok = True
    elif op == 3:
        kind, key = "resource", "s2"
        ok = conn.execute("SELECT fencing_resource_advance('s2', %s)", (token,)).fetchone()[0] is True
    else:
        kind, key = "table", "ledger"
        conn.execute("INSERT INTO ledger (n, fence) VALUES (%s, %s)", (i, token))
        ok = True
    if ok:
        rec.ack(kind, key, token)
    else:
        rec.note("refused", kind, key, token)


def lease_step(index):
    """Acquire and release leases on a resource shared by every leaser (hot)
    and on one of its own; record each token fencing_acquire returned, before
    the release. Every acquire is made by a holder of its own: a release
    commits without a WAL flush and may be lost in a failover, and the same
    holder's next acquire would then be a re-acquire of its still-live lease,
    which returns the same token by design. With a new holder each time, any
    token returned twice was issued twice."""

    def step(conn, i, rec):
        resource = "hot" if i % 2 else f"cold-{index}"
        holder = f"leaser-{index}-{os.getpid()}-{i}"
        started = time.time()
        token = conn.execute("SELECT fencing_acquire(%s, %s, '3 s', wait => '5 s')::text",
                             (resource, holder)).fetchone()[0]
        if token is not None:
            rec.ack("lease", resource, int(token), started)
            conn.execute("SELECT fencing_release(%s, %s::fencing_token)", (resource, token))
    return step


def issue_order_violations(issued):
    """Acquires of one resource, [(token, call started, acknowledged)]: an
    acquire that began after another's token was acknowledged (by any client)
    must get a larger token. Counts those that did not."""
    by_ack = sorted(issued, key=lambda x: x[2])
    i, highest, violations = 0, None, 0
    for token, started, _ in sorted(issued, key=lambda x: x[1]):
        while i < len(by_ack) and by_ack[i][2] < started:
            highest = by_ack[i][0] if highest is None else max(highest, by_ack[i][0])
            i += 1
        if highest is not None and token <= highest:
            violations += 1
    return violations


def summary(directory, before=None, after=None):
    """Figures from the recorded lines; with --before T only acknowledgements
    up to T count, with --after T only those after T ("first" = the smallest
    lease token per resource acknowledged after T)."""
    acked = {}          # (kind, key) -> max token
    first = {}          # lease resource -> min token (with --after)
    writes = leases = refused = lost = errors = 0
    tokens = {}         # lease resource -> [(token, call started, acknowledged)], all leasers
    for path in sorted(glob.glob(os.path.join(directory, "*.acks"))):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) not in (4, 5):
                    continue
                t, kind, key, token = float(parts[0]), parts[1], parts[2], int(parts[3])
                if kind == "refused":
                    refused += 1
                    continue
                if kind == "lost":
                    lost += 1
                    continue
                if kind == "error":
                    errors += 1
                    continue
                if kind == "lease":
                    tokens.setdefault(key, []).append((token, float(parts[4]), t))
                if before is not None and t > before:
                    continue
                if after is not None and t <= after:
                    continue
                if kind == "lease":
                    leases += 1
                    first[key] = min(first.get(key, token), token)
                else:
                    writes += 1
                acked[(kind, key)] = max(acked.get((kind, key), token), token)
    # Tokens are per resource: two resources may each issue 7.
    issued = sum(len(ts) for ts in tokens.values())
    duplicates = sum(len(ts) - len({tok for tok, _, _ in ts}) for ts in tokens.values())
    order_violations = sum(issue_order_violations(ts) for ts in tokens.values())
    for (kind, key), token in sorted(acked.items()):
        print(f"max {kind} {key} {token}")
    for key, token in sorted(first.items()):
        print(f"first lease {key} {token}")
    print(f"writes {writes}")
    print(f"leases {leases}")
    print(f"lease_tokens {issued}")
    print(f"lease_duplicates {duplicates}")
    print(f"lease_order_violations {order_violations}")
    print(f"refused {refused}")
    print(f"lost {lost}")
    print(f"errors {errors}")


def verify(directory):
    """Every acknowledged INSERT (orders of s1, ledger) is on the primary that
    $PATRONI_DSN reaches: prints "missing N" and the number checked."""
    import psycopg
    expected = {"resource": set(), "table": set()}
    for path in glob.glob(os.path.join(directory, "*.acks")):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 4 and (parts[1], parts[2]) in (("resource", "s1"), ("table", "ledger")):
                    expected[parts[1]].add(int(parts[3]))
    with psycopg.connect(os.environ["PATRONI_DSN"], autocommit=True) as conn:
        found = {
            "resource": {int(r[0]) for r in conn.execute("SELECT fence::text FROM orders WHERE shard = 's1'")},
            "table": {int(r[0]) for r in conn.execute("SELECT fence::text FROM ledger")},
        }
    print(f"checked {sum(len(v) for v in expected.values())}")
    print(f"missing {sum(len(v - found[k]) for k, v in expected.items())}")


def main():
    role, directory = sys.argv[1], sys.argv[2]
    if role == "writer":
        run_client(Recorder(directory, role), write_step)
    elif role == "leaser":
        run_client(Recorder(directory, role), lease_step(int(sys.argv[3])))
    elif role == "verify":
        verify(directory)
    elif role == "summary":
        args = sys.argv[3:]
        before = float(args[args.index("--before") + 1]) if "--before" in args else None
        after = float(args[args.index("--after") + 1]) if "--after" in args else None
        summary(directory, before, after)
    else:
        sys.exit(f"unknown role {role}")


if __name__ == "__main__":
    main()
