#!/usr/bin/python3
"""fencing from Django's ORM (Debian python3-django with python3-psycopg2),
with no SQL changes: save() inside transaction.atomic() after SET LOCAL
fencing.token.

Django's save() writes every column back, the token column with the value it
read. Under fencing.token that value is an echo (the row's current token): the
write carries the session token, which the guard checks and stores. A stale
holder's save() raises StaleToken (SQLSTATE TF001), carrying the offered token
and the high-water mark from the error's DETAIL field.

Standalone: settings.configure(), no project. Connection from the libpq
environment (PGHOST, PGPORT, PGUSER, PGDATABASE). Prints "ok - ..." lines and
exits 1 on the first failed expectation.
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

import django
from django.conf import settings

settings.configure(
    DATABASES={"default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("PGDATABASE", "postgres"),
        "USER": os.environ.get("PGUSER", ""),
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
    }},
    INSTALLED_APPS=[],
    USE_TZ=True,
)
django.setup()

from django.db import DatabaseError, connection, models, transaction  # noqa: E402


class FencingTokenField(models.BigIntegerField):
    """A fencing_token column, as Python ints (0 to 9223372036854775807)."""

    def db_type(self, connection):
        return "fencing_token"

    def from_db_value(self, value, expression, connection):
        # psycopg2 does not know the type and returns its text.
        return None if value is None else int(value)


class Item(models.Model):
    item = models.TextField(primary_key=True)
    stock = models.IntegerField()
    note = models.TextField(default="")
    fencing_token = FencingTokenField(null=True)

    class Meta:
        app_label = "fencing_example"
        db_table = "ex_django"


# fencing's refusals as StaleToken / TokenRequired (Django wraps psycopg2's error).
fencing_errors = partial(typed_errors, DatabaseError, lambda e: e.__cause__)


@contextmanager
def fenced(token):
    """transaction.atomic() whose ORM writes carry token."""
    with fencing_errors(), transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SET LOCAL fencing.token = %s", [str(token)])
        yield


def sql_value(sql, params=()):
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchone()[0]


def main():
    resource = f"ex-django-{os.getpid()}-{time.time_ns()}"
    with connection.cursor() as cur:
        cur.execute("SET client_min_messages = warning")
        cur.execute("DROP TABLE IF EXISTS ex_django")
    # The ORM creates the table; its fencing_token column fences it (row scope).
    with connection.schema_editor() as editor:
        editor.create_model(Item)
    ok("schema_editor created ex_django, fenced",
       sql_value("SELECT count(*) FROM fencing_protected WHERE table_name = 'ex_django'::regclass") == 1)
    Item.objects.create(item="SKU-001", stock=10, fencing_token=0)  # a token is required

    a = int(sql_value("SELECT fencing_acquire(%s, 'worker-a', '30 s')::text", [resource]))
    ok(f"acquired token {a}", a > 0)
    ok(f"advanced SKU-001 to {a}", sql_value("SELECT fencing_advance('ex_django', %s, %s)",
                                             [a, '{"item": "SKU-001"}']))
    n = sql_value("SELECT fenced_update('ex_django', %s, %s, %s)", [a, '{"item": "SKU-001"}', '{"stock": 9}'])
    ok("fenced_update wrote 1 row", n == 1)

    # save() writes every column, fencing_token included, with the value read.
    with fenced(a):
        item = Item.objects.get(pk="SKU-001")
        ok(f"read stock {item.stock}, fencing_token {item.fencing_token}", item.fencing_token == a)
        item.stock -= 1
        item.save()
    item.refresh_from_db()
    ok(f"save() under SET LOCAL fencing.token = {a}: stock 8, fencing_token {item.fencing_token}",
       (item.stock, item.fencing_token) == (8, a))

    # A's lease ends; B takes the lock, advances, and saves through the ORM.
    sql_value("SELECT fencing_release(%s, %s)", [resource, a])
    b = int(sql_value("SELECT fencing_acquire(%s, 'worker-b', '30 s')::text", [resource]))
    sql_value("SELECT fencing_advance('ex_django', %s, %s)", [b, '{"item": "SKU-001"}'])
    with fenced(b):
        item_b = Item.objects.get(pk="SKU-001")
        item_b.stock, item_b.note = 7, "written by B"
        item_b.save()  # echoes the token it read (b: B's advance raised it)
    item_b.refresh_from_db()
    ok(f"B's save() under fencing.token {b}: stock 7, fencing_token {item_b.fencing_token}",
       (item_b.stock, item_b.fencing_token) == (7, b))

    # A wakes up, re-reads (fencing_token b) and saves with its old token: the
    # echoed b carries a, refused as stale.
    def stale_save():
        with fenced(a):
            x = Item.objects.get(pk="SKU-001")
            x.stock = 99
            x.save()
    e = expect_stale("stale save()", stale_save)
    ok(f"stale save() -> StaleToken(offered {e.offered}, hwm {e.hwm})", (e.offered, e.hwm) == (a, b))

    # A saves the object it read before B wrote (fencing_token a, not the current b).
    def stale_old_object():
        with fenced(a):
            item.stock = 98
            item.save()
    e = expect_stale("stale save() of an object read earlier", stale_old_object)
    ok(f"stale save() of an object read earlier -> StaleToken(offered {e.offered}, hwm {e.hwm})",
       (e.offered, e.hwm) == (a, b))
    now = Item.objects.get(pk="SKU-001")
    ok("stock is B's: 7", (now.stock, now.note, now.fencing_token) == (7, "written by B", b))
    sql_value("SELECT fencing_release(%s, %s)", [resource, b])

    # The largest token, a plain Python int.
    top = 9223372036854775807
    sql_value("SELECT fencing_resource_advance(%s, %s)", [resource + "-big", top - 1])
    c = int(sql_value("SELECT fencing_acquire(%s, 'worker-c', '30 s')::text", [resource + "-big"]))
    ok(f"fencing_acquire handed out {c}", c == top)
    # No advance this time: save() echoes b under fencing.token = c.
    with fenced(c):
        x = Item.objects.get(pk="SKU-001")
        echoed = x.fencing_token
        x.stock = 1
        x.save()
    stored = Item.objects.get(pk="SKU-001").fencing_token
    ok(f"save() echoing {echoed} under fencing.token {c} stored {stored} exactly", (echoed, stored) == (b, top))

    def stale_big():
        with fenced(top - 1):
            x = Item.objects.get(pk="SKU-001")
            x.stock = 2
            x.save()
    e = expect_stale("stale 9223372036854775806", stale_big)
    ok(f"stale {top - 1} -> StaleToken(offered {e.offered}, hwm {e.hwm})", (e.offered, e.hwm) == (top - 1, top))
    sql_value("SELECT fencing_release(%s, %s)", [resource + "-big", c])

    sql_value("SELECT fencing_protect('ex_django', require_token => true)")
    try:
        with fencing_errors(), transaction.atomic():
            Item.objects.filter(pk="SKU-001").update(stock=0)
        ok("write without a token refused", False)
    except TokenRequired as e:
        ok(f"QuerySet.update() without a token -> TokenRequired ({e})")

    with connection.schema_editor() as editor:
        editor.delete_model(Item)


if __name__ == "__main__":
    main()
