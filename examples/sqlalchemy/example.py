#!/usr/bin/python3
"""fencing from SQLAlchemy's ORM (Debian python3-sqlalchemy, psycopg2), with
no SQL changes: a Session transaction that starts with SET LOCAL
fencing.token, then ordinary ORM changes.

SQLAlchemy's UPDATE writes only the changed columns, so the token column is
not in it: the guard checks fencing.token and fills the column in. A stale
holder's flush raises StaleToken (SQLSTATE TF001), carrying the offered token
and the high-water mark from the error's DETAIL field.

Connection from the libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE).
Prints "ok - ..." lines; exits 1 on the first failed expectation.
"""
import os
import sys
import time
from contextlib import contextmanager
from functools import partial

# The typed errors shared by the Python examples (examples/python/fencing_errors.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from checks import expect_stale, ok  # noqa: E402
from fencing_errors import TokenRequired, typed_errors  # noqa: E402

from sqlalchemy import Column, Integer, Text, create_engine, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, declarative_base
from sqlalchemy.types import UserDefinedType


class FencingToken(UserDefinedType):
    """The fencing_token column type, as Python ints (0 to 9223372036854775807)."""
    cache_ok = True

    def get_col_spec(self, **kw):
        return "fencing_token"

    def bind_processor(self, dialect):
        return lambda value: None if value is None else int(value)

    def result_processor(self, dialect, coltype):
        # psycopg2 does not know the type and returns its text.
        return lambda value: None if value is None else int(value)


Base = declarative_base()


class Item(Base):
    __tablename__ = "ex_sqlalchemy"
    item = Column(Text, primary_key=True)
    stock = Column(Integer, nullable=False)
    note = Column(Text, nullable=False, default="")
    fencing_token = Column(FencingToken)


# fencing's refusals as StaleToken / TokenRequired (SQLAlchemy wraps psycopg2's error).
fencing_errors = partial(typed_errors, DBAPIError, lambda e: e.orig)


@contextmanager
def fenced(engine, token):
    """A Session transaction whose writes carry token."""
    with fencing_errors(), Session(engine) as session, session.begin():
        session.execute(text("SELECT set_config('fencing.token', :t, true)"), {"t": str(token)})
        yield session


def main():
    env = os.environ
    engine = create_engine("postgresql+psycopg2://", connect_args={
        "host": env.get("PGHOST"), "port": env.get("PGPORT"), "user": env.get("PGUSER"),
        "dbname": env.get("PGDATABASE")}, future=True)
    statements = []
    event.listen(engine, "before_cursor_execute",
                 lambda conn, cur, stmt, params, ctx, many: statements.append(stmt))

    def scalar(sql, **params):
        with engine.begin() as conn:
            return conn.execute(text(sql), params).scalar()

    resource = f"ex-sqlalchemy-{os.getpid()}-{time.time_ns()}"
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)  # its fencing_token column fences it (row scope)
    ok("create_all made ex_sqlalchemy, fenced",
       scalar("SELECT count(*) FROM fencing_protected WHERE table_name = 'ex_sqlalchemy'::regclass") == 1)
    with Session(engine) as s, s.begin():
        s.add(Item(item="SKU-001", stock=10, fencing_token=0))  # a token is required

    a = int(scalar("SELECT fencing_acquire(:r, 'worker-a', '30 s')::text", r=resource))
    ok(f"acquired token {a}", a > 0)
    ok(f"advanced SKU-001 to {a}",
       scalar("SELECT fencing_advance('ex_sqlalchemy', :t, :k)", t=a, k='{"item": "SKU-001"}'))
    ok("fenced_update wrote 1 row",
       scalar("SELECT fenced_update('ex_sqlalchemy', :t, :k, :c)", t=a, k='{"item": "SKU-001"}',
              c='{"stock": 9}') == 1)

    statements.clear()
    with fenced(engine, a) as s:
        item = s.get(Item, "SKU-001")
        item.stock -= 1
    update = [st for st in statements if st.lstrip().upper().startswith("UPDATE")]
    ok(f"the ORM's UPDATE names only the changed column: {update[0]!r}",
       len(update) == 1 and "stock" in update[0] and "fencing_token" not in update[0])
    with Session(engine) as s:
        item = s.get(Item, "SKU-001")
        ok(f"flush under SET LOCAL fencing.token = {a}: stock 8, fencing_token {item.fencing_token}",
           (item.stock, item.fencing_token) == (8, a))

    # A's lease ends; B takes the lock, advances, writes through the ORM.
    scalar("SELECT fencing_release(:r, :t)", r=resource, t=a)
    b = int(scalar("SELECT fencing_acquire(:r, 'worker-b', '30 s')::text", r=resource))
    scalar("SELECT fencing_advance('ex_sqlalchemy', :t, :k)", t=b, k='{"item": "SKU-001"}')
    with fenced(engine, b) as s:
        item = s.get(Item, "SKU-001")
        item.stock, item.note = 7, "written by B"
    ok(f"holder B took token {b} and wrote", b > a)

    def stale_flush():
        with fenced(engine, a) as s:
            s.get(Item, "SKU-001").stock = 99
    e = expect_stale("stale flush", stale_flush)
    ok(f"stale flush -> StaleToken(offered {e.offered}, hwm {e.hwm})", (e.offered, e.hwm) == (a, b))
    with Session(engine) as s:
        now = s.get(Item, "SKU-001")
        ok("stock is B's: 7", (now.stock, now.note, now.fencing_token) == (7, "written by B", b))
    scalar("SELECT fencing_release(:r, :t)", r=resource, t=b)

    # The largest token, a plain Python int.
    top = 9223372036854775807
    scalar("SELECT fencing_resource_advance(:r, :t)", r=resource + "-big", t=top - 1)
    c = int(scalar("SELECT fencing_acquire(:r, 'worker-c', '30 s')::text", r=resource + "-big"))
    ok(f"fencing_acquire handed out {c}", c == top)
    with fenced(engine, c) as s:
        s.get(Item, "SKU-001").stock = 1
    with Session(engine) as s:
        ok("token 9223372036854775807 stored exactly", s.get(Item, "SKU-001").fencing_token == top)

    def stale_big():
        with fenced(engine, top - 1) as s:
            s.get(Item, "SKU-001").stock = 2
    e = expect_stale("stale 9223372036854775806", stale_big)
    ok(f"stale {top - 1} -> StaleToken(offered {e.offered}, hwm {e.hwm})", (e.offered, e.hwm) == (top - 1, top))
    scalar("SELECT fencing_release(:r, :t)", r=resource + "-big", t=c)

    scalar("SELECT fencing_protect('ex_sqlalchemy', require_token => true)")
    try:
        with fencing_errors(), Session(engine) as s, s.begin():
            s.get(Item, "SKU-001").stock = 0
        ok("write without a token refused", False)
    except TokenRequired as e:
        ok(f"flush without a token -> TokenRequired ({e})")

    Base.metadata.drop_all(engine)
    engine.dispose()


if __name__ == "__main__":
    main()
