#!/usr/bin/python3
"""pgfencing in a worker: hold a lease on a job queue, write under its
token, stop when the lease is lost. Connection from the libpq environment
(PGHOST, PGPORT, ...); needs CREATE EXTENSION fencing. Type-checks with
mypy --strict.

    python3 example.py
"""
import asyncio
from typing import Any

import psycopg

import pgfencing
import pgfencing.asyncpg as fa
import pgfencing.psycopg as fp

TABLE = "example_jobs"


def setup(conn: "psycopg.Connection[Any]") -> None:
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    # A fencing_token column: protected in row scope, writes need a token.
    conn.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, state text, fence fencing_token)")


def on_lost(lease: fp.Lease) -> None:
    print("lease lost:", lease.lost_reason)


def with_psycopg() -> None:
    conn = fp.connect("", autocommit=True)
    setup(conn)
    # `with` acquires (waiting up to 5 s for a live holder) and releases at the end.
    with fp.Lease("", "example-queue", ttl=10, wait=5, on_lost=on_lost) as lease:
        token = lease.require_live()
        print("psycopg: holding example-queue with token", token)
        # BEGIN; SET LOCAL fencing.token = <token>; ...; COMMIT, even on autocommit.
        with lease.transaction(conn) as tx:
            tx.execute(f"INSERT INTO {TABLE} VALUES (1, 'claimed'), (2, 'claimed')")
        lease.fenced_update(conn, TABLE, {"id": 1}, {"state": "done"})
        # A newer holder elsewhere fences us; our next write is refused.
        conn.execute(f"SELECT fencing_advance('{TABLE}', %s, '{{\"id\": 2}}')", (token + 1,))
        try:
            with lease.transaction(conn) as tx:
                tx.execute(f"UPDATE {TABLE} SET state = 'done' WHERE id = 2")
        except pgfencing.StaleTokenError as e:
            print(f"psycopg: refused on {e.schema}.{e.table} {e.key}: offered {e.offered}, "
                  f"high-water mark {e.hwm}")
    print("psycopg: after the block the lease is", lease.state)
    conn.close()


async def with_asyncpg() -> None:
    conn = await fa.connect()  # fencing_token <-> int registered
    async with fa.Lease(None, "example-queue", ttl=10, wait=5) as lease:
        print("asyncpg: holding example-queue with token", lease.token)
        async with lease.transaction(conn):
            await conn.execute(f"UPDATE {TABLE} SET state = 'archived' WHERE id = 1")
        print("asyncpg: row 1 now carries", await conn.fetchval(f"SELECT fence FROM {TABLE} WHERE id = 1"))
    await conn.execute(f"DROP TABLE {TABLE}")
    await conn.close()


if __name__ == "__main__":
    with_psycopg()
    asyncio.run(with_asyncpg())
