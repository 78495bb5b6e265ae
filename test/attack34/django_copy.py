"""atk26: a Django data migration that recreates a model's table, as its
operations run it in one atomic migration: CreateModel(AcctNew), RunPython
copying the rows through the ORM (Old.objects.all() -> bulk_create), then
DeleteModel(Acct) and AlterModelTable(AcctNew -> the old table name). A fenced
writer on another connection commits UPDATE ... SET v='ACKED' WHERE id=2 at
the row's own token (20) between the copy and the DROP. Prints "acked write
kept", "refused <sqlstate>, acked write kept" or "HOLE: acknowledged write
lost"; exit 1 on a hole.

    /usr/bin/python3 test/attack34/django_copy.py SOCKDIR PORT DBNAME
"""
import sys

import django
import psycopg2
from django.conf import settings

sock, port, dbname = sys.argv[1:4]
settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": dbname,
                           "USER": "postgres", "HOST": sock, "PORT": port}},
    INSTALLED_APPS=[], USE_TZ=True)
django.setup()

from django.db import connection, models, transaction  # noqa: E402


class FencingToken(models.BigIntegerField):
    def db_type(self, connection):
        return "fencing_token"


def model(name, table):
    attrs = {"__module__": __name__, "id": models.IntegerField(primary_key=True),
             "v": models.TextField(), "tok": FencingToken(),
             "Meta": type("Meta", (), {"app_label": "atk", "db_table": table})}
    return type(name, (models.Model,), attrs)


Acct = model("Acct", "dj_acct")
AcctNew = model("AcctNew", "dj_acct_new")

w = psycopg2.connect(host=sock, port=port, dbname=dbname, user="postgres")
w.autocommit = True
cur = w.cursor()
cur.execute("DROP TABLE IF EXISTS dj_acct, dj_acct_new")
cur.execute("CREATE TABLE dj_acct (id int PRIMARY KEY, v text NOT NULL, tok fencing_token NOT NULL)")
cur.execute("INSERT INTO dj_acct VALUES (1, 'one', 10), (2, 'two', 20)")

refused = None
try:
    with transaction.atomic():
        with connection.schema_editor(atomic=False) as editor:
            editor.create_model(AcctNew)                       # CreateModel
        rows = list(Acct.objects.all().values("id", "v", "tok"))  # RunPython: read
        cur.execute("BEGIN; SET LOCAL fencing.token = 20;"
                    " UPDATE dj_acct SET v = 'ACKED' WHERE id = 2; COMMIT")  # acknowledged
        AcctNew.objects.bulk_create([AcctNew(**r) for r in rows])          # RunPython: write
        with connection.schema_editor(atomic=False) as editor:
            editor.delete_model(Acct)                          # DeleteModel
            editor.alter_db_table(AcctNew, "dj_acct_new", "dj_acct")  # AlterModelTable
except django.db.utils.Error as e:
    refused = getattr(e.__cause__, "pgcode", "error")

cur.execute("SELECT count(*) FROM dj_acct WHERE v = 'ACKED'")
kept = cur.fetchone()[0] == 1
print("django recreate via RunPython copy: " + (
    f"refused {refused}, acked write kept" if refused and kept else
    "acked write kept" if kept else "HOLE: acknowledged write lost"))
sys.exit(0 if kept else 1)
