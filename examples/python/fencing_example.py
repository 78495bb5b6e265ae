#!/usr/bin/python3
"""fencing from Python with psycopg 3 (Debian python3-psycopg).

Tokens are plain Python ints: psycopg binds a small one as smallint, a large
one as bigint or numeric, and every one converts to fencing_token exactly.

1. a token from fencing_acquire(): advance, read, write through
   fenced_update(), then through an ordinary UPDATE under SET LOCAL
   fencing.token; a stale holder's writes become a typed StaleToken error;
2. a token from etcd (the lock put's revision, python3-etcd3), the same way;
3. the largest token, 9223372036854775807, without loss.

Connection from the libpq environment (PGHOST, PGPORT, ...); the etcd
endpoint from ETCD_ENDPOINT ("127.0.0.1:2379"). Prints "ok - ..." lines and
exits non-zero on the first failed expectation.
"""
import os
import time
from contextlib import contextmanager
from functools import partial

import psycopg
from psycopg.types.json import Jsonb

from checks import ok
from fencing_errors import StaleToken, TokenRequired, typed_errors

# fencing's refusals from psycopg 3, as StaleToken / TokenRequired.
fencing_errors = partial(typed_errors, psycopg.Error)


class Fenced:
    """Writes with one token, on one connection (autocommit)."""

    def __init__(self, conn, token):
        self.conn, self.token = conn, token

    def update(self, table, key, changes):
        """fenced_update(): the rows written. 0 rows while the key's HWM is
        at or above the token (strict mode refuses an equal one) is raised as
        StaleToken with that HWM (there is no error to read it from); 0 rows
        below it means there is no such row."""
        n = self.conn.execute("SELECT fenced_update(%s, %s, %s, %s)",
                              (table, self.token, Jsonb(key), Jsonb(changes))).fetchone()[0]
        if n == 0:
            hwm = self.conn.execute("SELECT fencing_high_water(%s, %s)::text",
                                    (table, Jsonb(key))).fetchone()[0]
            if int(hwm) >= self.token:
                raise StaleToken("fenced_update() wrote 0 rows", self.token, int(hwm))
        return n

    @contextmanager
    def transaction(self):
        """A transaction whose ordinary statements carry the token."""
        with fencing_errors(), self.conn.transaction():
            # SET LOCAL takes no parameters; set_config(..., true) is the same.
            self.conn.execute("SELECT set_config('fencing.token', %s, true)", (str(self.token),))
            yield self.conn


# ------------------------------------------------------------ checks

def stock(conn, table, item):
    row = conn.execute(f"SELECT stock, fence::text FROM {table} WHERE item = %s", (item,)).fetchone()
    return row[0], (int(row[1]) if row[1] is not None else None)


def story(conn, table, item, token_a, token_b, source):
    """A holds token_a and writes twice; B (token_b) takes over and writes; A's
    writes with its old token are refused as StaleToken."""
    a, b = Fenced(conn, token_a), Fenced(conn, token_b)
    ok(f"{source}: advanced {item} to {token_a}",
       conn.execute("SELECT fencing_advance(%s, %s, %s)", (table, token_a, Jsonb({"item": item}))).fetchone()[0])
    s, _ = stock(conn, table, item)
    ok(f"{source}: fenced_update with {token_a} wrote 1 row", a.update(table, {"item": item}, {"stock": s - 1}) == 1)
    with a.transaction() as c:
        c.execute(f"UPDATE {table} SET stock = stock - 1 WHERE item = %s", (item,))
    ok(f"{source}: transparent UPDATE stored token {token_a}", stock(conn, table, item) == (s - 2, token_a),
       stock(conn, table, item))
    # B fences A before reading, then writes.
    conn.execute("SELECT fencing_advance(%s, %s, %s)", (table, token_b, Jsonb({"item": item})))
    b.update(table, {"item": item}, {"stock": 7})
    try:
        a.update(table, {"item": item}, {"stock": 99})
        ok(f"{source}: stale fenced_update refused", False)
    except StaleToken as e:
        ok(f"{source}: stale fenced_update -> StaleToken(offered={e.offered}, hwm={e.hwm})",
           (e.offered, e.hwm) == (token_a, token_b), (e.offered, e.hwm))
    try:
        with a.transaction() as c:
            c.execute(f"UPDATE {table} SET stock = 99 WHERE item = %s", (item,))
        ok(f"{source}: stale transparent UPDATE refused", False)
    except StaleToken as e:
        ok(f"{source}: stale UPDATE -> StaleToken {e.sqlstate} (offered={e.offered}, hwm={e.hwm}) from DETAIL",
           (e.sqlstate, e.offered, e.hwm) == ("TF001", token_a, token_b), (e.sqlstate, e.offered, e.hwm))
    ok(f"{source}: stock is B's", stock(conn, table, item) == (7, token_b), stock(conn, table, item))


# ------------------------------------------------------------ etcd

class EtcdLock:
    """A lease and a put-if-absent transaction on /locks/<name>; the token
    is the put's revision, which etcd increases with every write."""

    def __init__(self, client, name, holder, ttl=30):
        self.client, self.key, self.holder, self.ttl = client, f"/locks/{name}", holder, ttl
        self.lease = None

    def acquire(self, timeout=10):
        txn = self.client.transactions
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lease = self.client.lease(self.ttl)
            won, responses = self.client.transaction(
                compare=[txn.version(self.key) == 0],
                success=[txn.put(self.key, self.holder, lease=lease)], failure=[])
            if won:
                self.lease = lease
                return responses[0].response_put.header.revision
            lease.revoke()
            time.sleep(0.1)
        raise TimeoutError(self.key)

    def release(self):
        self.lease.revoke()


def main():
    table = "ex_python"
    resource = f"ex-python-{os.getpid()}-{time.time_ns()}"
    with psycopg.connect("", autocommit=True) as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (item text PRIMARY KEY, stock int NOT NULL, fence fencing_token)")
        conn.execute(f"INSERT INTO {table} VALUES ('SKU-001', 10, 0), ('SKU-ETCD', 10, 0)")

        # 1. Tokens from the database's own leases.
        token_a = int(conn.execute("SELECT fencing_acquire(%s, 'worker-a', '30 s')::text", (resource,)).fetchone()[0])
        ok(f"fencing_acquire: token {token_a}", token_a > 0)
        conn.execute("SELECT fencing_release(%s, %s)", (resource, token_a))  # A's lease ends
        token_b = int(conn.execute("SELECT fencing_acquire(%s, 'worker-b', '30 s')::text", (resource,)).fetchone()[0])
        ok(f"fencing_acquire after A's lease: token {token_b}", token_b > token_a)
        story(conn, table, "SKU-001", token_a, token_b, "lease")
        conn.execute("SELECT fencing_release(%s, %s)", (resource, token_b))

        # 2. Tokens from etcd.
        import etcd3
        host, port = os.environ["ETCD_ENDPOINT"].rsplit(":", 1)
        etcd = etcd3.client(host=host, port=int(port), timeout=5)
        lock_a = EtcdLock(etcd, resource, "worker-a")
        rev_a = lock_a.acquire()
        lock_a.release()  # A's lease ends (in life: it expires while A is paused)
        lock_b = EtcdLock(etcd, resource, "worker-b")
        rev_b = lock_b.acquire()
        ok(f"etcd revisions {rev_a} < {rev_b}", rev_a < rev_b)
        story(conn, table, "SKU-ETCD", rev_a, rev_b, "etcd")
        lock_b.release()
        etcd.close()

        # 3. The largest token, a plain Python int.
        top = 9223372036854775807
        conn.execute("SELECT fencing_resource_advance(%s, %s)", (resource + "-big", top - 1))
        token_c = int(conn.execute("SELECT fencing_acquire(%s, 'worker-c', '30 s')::text",
                                   (resource + "-big",)).fetchone()[0])
        ok(f"fencing_acquire handed out {token_c}", token_c == top, token_c)
        with Fenced(conn, token_c).transaction() as c:
            c.execute(f"UPDATE {table} SET stock = 1 WHERE item = 'SKU-001'")
        ok("token 9223372036854775807 stored exactly", stock(conn, table, "SKU-001") == (1, top))
        try:
            with Fenced(conn, top - 1).transaction() as c:
                c.execute(f"UPDATE {table} SET stock = 2 WHERE item = 'SKU-001'")
            ok("stale big token refused", False)
        except StaleToken as e:
            ok(f"stale {top - 1} -> StaleToken(offered={e.offered}, hwm={e.hwm})", (e.offered, e.hwm) == (top - 1, top))

        # TF002: a table that requires a token.
        conn.execute(f"SELECT fencing_protect('{table}', require_token => true)")
        try:
            with fencing_errors():
                conn.execute(f"UPDATE {table} SET stock = 0 WHERE item = 'SKU-001'")
            ok("write without a token refused", False)
        except TokenRequired as e:
            ok(f"write without a token -> TokenRequired ({e})")

        conn.execute("SELECT fencing_release(%s, %s)", (resource + "-big", token_c))
        conn.execute(f"DROP TABLE {table}")


if __name__ == "__main__":
    main()
