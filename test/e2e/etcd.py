#!/usr/bin/python3
"""End to end with etcd: a one-member etcd on loopback (Debian's etcd-server),
two client processes with python3-etcd3 locks (lease + put-if-absent
transaction, token = the put's revision), a real SIGSTOP past the lease TTL.
Prints "ok N - ..." lines and "N passed, N failed"."""
import sys

from story_checks import Tap, scratch_db, services, story_checks, terminate_on_sigterm

terminate_on_sigterm()
tap = Tap()
try:
    with services.Etcd() as etcd:
        import etcd3
        version = etcd3.client(host="127.0.0.1", port=etcd.port).status().version
        tap.check(f"etcd {version} runs on {etcd.endpoint}", True, bool(version))
        with scratch_db("etcd") as (dbname, conn):
            story_checks(tap, "etcd", etcd.endpoint, dbname, conn, "revision")
except Exception as e:
    tap.fail("etcd suite ran to the end", f"{type(e).__name__}: {e}")
sys.exit(tap.finish())
