"""The lease holder of the pause test, run as a child process so that the
parent can SIGSTOP it: acquires, reports its token, waits for the lost
signal, then tries its late writes. One JSON object per line on stdout.

    pause_child.py psycopg|psycopg-async|asyncpg RESOURCE TABLE TTL
"""
import asyncio
import json
import sys
import time

import pgfencing

DRIVER, RESOURCE, TABLE, TTL = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
UPDATE = f"UPDATE {TABLE} SET v = 'late' WHERE id = 1"


def say(**kw):
    print(json.dumps(kw), flush=True)


def stale_fields(e):
    return {"type": type(e).__module__ + "." + type(e).__name__, "schema": e.schema, "table": e.table,
            "key": e.key, "offered": e.offered, "hwm": e.hwm, "strict": e.strict}


def run_sync():
    import pgfencing.psycopg as fp
    fired = []
    conn = fp.connect("", autocommit=True)
    lease = fp.Lease("", RESOURCE, ttl=TTL, on_lost=lambda l: fired.append(time.monotonic()))
    token = lease.acquire()
    say(token=token)
    got = lease.lost_event.wait(60)
    say(lost=got, callback=len(fired), reason=lease.lost_reason, property=lease.lost)
    try:
        with lease.transaction(conn) as c:
            c.execute(UPDATE)
        say(local="wrote")
    except pgfencing.LeaseLostError as e:
        say(local="LeaseLostError", message=str(e))
    try:
        with fp.transaction(conn, token) as c:  # the late write, past the library's own check
            c.execute(UPDATE)
        say(late="wrote")
    except pgfencing.StaleTokenError as e:
        say(late="StaleTokenError", **stale_fields(e))
    lease.close()


async def run_async():
    if DRIVER == "asyncpg":
        import pgfencing.asyncpg as fa
        conn = await fa.connect()
        lease = fa.Lease(None, RESOURCE, ttl=TTL)
        tx = fa.transaction
        execute = conn.execute
    else:
        import pgfencing.psycopg as fp
        conn = await fp.async_connect("", autocommit=True)
        lease = fp.AsyncLease("", RESOURCE, ttl=TTL)
        tx = fp.async_transaction
        execute = conn.execute
    fired = []

    async def on_lost(l):
        fired.append(time.monotonic())
    lease.on_lost = on_lost
    token = await lease.acquire()
    say(token=token)
    try:
        await asyncio.wait_for(lease.lost_event.wait(), 60)
        got = True
    except asyncio.TimeoutError:
        got = False
    await asyncio.sleep(0)  # let the coroutine callback run
    say(lost=got, callback=len(fired), reason=lease.lost_reason, property=lease.lost)
    try:
        async with lease.transaction(conn):
            await execute(UPDATE)
        say(local="wrote")
    except pgfencing.LeaseLostError as e:
        say(local="LeaseLostError", message=str(e))
    try:
        async with tx(conn, token):
            await execute(UPDATE)
        say(late="wrote")
    except pgfencing.StaleTokenError as e:
        say(late="StaleTokenError", **stale_fields(e))
    await lease.close()
    await conn.close()


if DRIVER == "psycopg":
    run_sync()
else:
    asyncio.run(run_async())
