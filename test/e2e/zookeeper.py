#!/usr/bin/python3
"""End to end with ZooKeeper: a one-server ensemble on loopback (Debian's
zookeeper, quorum mode so a restart starts a new epoch), two client processes
with python3-kazoo locks (ephemeral sequential node, token = its czxid, a
zxid), a real SIGSTOP past the session timeout; then a restart, and tokens of
the new epoch against those of the old one.
Prints "ok N - ..." lines and "N passed, N failed"."""
import sys

from kazoo.client import KazooClient
from psycopg.types.json import Jsonb

from story_checks import ITEM, NAMESPACE, Tap, fencing_story, scratch_db, services, story_checks, \
    terminate_on_sigterm


def epoch(z):
    return z >> 32


def counter(z):
    return z & 0xFFFFFFFF


def literal_checks(tap, conn):
    q = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    tap.check("hex zxid input: '0x100000022' = 4294967330 (epoch 1, counter 34)",
              (True, 1, 34), (q("SELECT '0x100000022'::fencing_token = 4294967330"),
                              q("SELECT fencing_token_epoch('0x100000022')"),
                              q("SELECT fencing_token_counter('0x100000022')")))
    tap.check("across an epoch change: '0x100000022' > '0xffffffff' and '0x200000001' > '0x1ffffffff'",
              (True, True), (q("SELECT '0x100000022'::fencing_token > '0xffffffff'::fencing_token"),
                             q("SELECT '0x200000001'::fencing_token > '0x1ffffffff'::fencing_token")))
    tap.check("'0X1FFFFFFFF' (upper case) < fencing_token_from_zxid(2, 1)", True,
              q("SELECT '0X1FFFFFFFF'::fencing_token < fencing_token_from_zxid(2, 1)"))


def epoch_change_checks(tap, zk, conn, old_token):
    """Restart the ensemble: a new epoch. A new holder's czxid has a higher
    epoch and a counter that started again, yet orders after every token of the
    old epoch, in the lock service and in the database."""
    zk.restart()
    client = KazooClient(hosts=zk.hosts, timeout=5.0)
    client.start(timeout=15)
    try:
        lock = client.Lock(f"/locks/{ITEM}", "C")
        if not lock.acquire(timeout=20):
            tap.fail("zookeeper: a holder takes the lock after the restart", "not acquired in 20 s")
            return
        new = client.exists(f"{lock.path}/{lock.node}").czxid
        tap.check(f"zookeeper: after the restart the token {new:#x} is in a new epoch "
                  f"(old {old_token:#x})", True, epoch(new) > epoch(old_token))
        tap.check("zookeeper: its counter started again (below the old token's), so only the epoch orders them",
                  True, counter(new) < counter(old_token))
        tap.check("the database orders the two zxids as hex text as ZooKeeper does", (True, epoch(new), counter(new)),
                  conn.execute("SELECT %s::fencing_token > %s::fencing_token, fencing_token_epoch(%s::fencing_token),"
                               " fencing_token_counter(%s::fencing_token)",
                               (f"{new:#x}", f"{old_token:#x}", f"{new:#x}", f"{new:#x}")).fetchone())
        rows = conn.execute("SELECT fenced_update('inventory', %s, %s, %s)",
                            (new, Jsonb({"item": ITEM}), Jsonb({"stock": 7}))).fetchone()[0]
        tap.check("the new epoch's holder writes (1 row)", 1, rows)
        rows = conn.execute("SELECT fenced_update('inventory', %s, %s, %s)",
                            (old_token, Jsonb({"item": ITEM}), Jsonb({"stock": 6}))).fetchone()[0]
        tap.check("the old epoch's token, larger counter and all, is refused (0 rows)", 0, rows)
        tap.check("the resource's high-water mark is the new epoch's token",
                  new, conn.execute("SELECT fencing_resource_high_water(%s, %s)::bigint",
                                    (ITEM, NAMESPACE)).fetchone()[0])
        lock.release()
    finally:
        client.stop()
        client.close()


terminate_on_sigterm()
tap = Tap()
try:
    with services.ZooKeeper() as zk:
        tap.check(f"ZooKeeper runs on {zk.hosts} (java, quorum mode, one server)", True, True)
        with scratch_db("zookeeper") as (dbname, conn):
            literal_checks(tap, conn)
            token = story_checks(tap, "zk", zk.hosts, dbname, conn, "czxid (zxid)")
            if token is not None:
                # The fenced story's last write left B's token as the HWM; put
                # it back before the epoch checks.
                fencing_story.setup_tables(conn)
                conn.execute("SELECT fenced_update('inventory', %s, %s, %s)",
                             (token, Jsonb({"item": ITEM}), Jsonb({"stock": 9})))
                epoch_change_checks(tap, zk, conn, token)
except Exception as e:
    tap.fail("ZooKeeper suite ran to the end (is Debian's zookeeper installed, with a java runtime?)",
             f"{type(e).__name__}: {e}")
sys.exit(tap.finish())
