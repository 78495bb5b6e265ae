"""atk26: recreates whose copy the copy-snapshot hook does not see, as clients run them.

Each case: a row-scope table t (rows (1,'one',10), (2,'two',20)), a migration in
one transaction that copies t into t_new, DROPs t and renames t_new to t; a
fenced writer on another connection commits UPDATE ... SET v='ACKED' WHERE id=2
at token 20 (the row's own token) between the copy and the DROP. Prints per
case "acked write kept", "refused <sqlstate>" (and kept) or "HOLE: acknowledged
write lost". Exit 1 on a hole.

    /usr/bin/python3 test/attack34/client_copies.py 'postgresql+psycopg2:///postgres?host=SOCKDIR&port=PORT'
"""
import io
import sys

import psycopg2
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.types import UserDefinedType


class FencingToken(UserDefinedType):
    cache_ok = True

    def get_col_spec(self, **kw):
        return "fencing_token"


url = sys.argv[1]
dsn = url.replace("postgresql+psycopg2", "postgresql")


def connect():  # a fresh backend: the library is not loaded until used
    c = psycopg2.connect(dsn)
    return c


def setup(pre_create_new):
    c = connect()
    c.autocommit = True
    cur = c.cursor()
    cur.execute("DROP TABLE IF EXISTS t, t_new")
    cur.execute("CREATE TABLE t (id int PRIMARY KEY, v text, tok fencing_token)")
    cur.execute("INSERT INTO t VALUES (1, 'one', 10), (2, 'two', 20)")
    if pre_create_new:
        cur.execute("CREATE TABLE t_new (LIKE t INCLUDING ALL)")
    c.close()


def write_acked():
    w = connect()
    w.autocommit = True
    w.cursor().execute("BEGIN; SET LOCAL fencing.token = 20; UPDATE t SET v = 'ACKED' WHERE id = 2; COMMIT")
    w.close()


def judge(case, refused):
    c = connect()
    cur = c.cursor()
    cur.execute("SELECT count(*) FROM t WHERE v = 'ACKED'")
    kept = cur.fetchone()[0] == 1
    c.close()
    verdict = ("refused %s, acked write kept" % refused if refused and kept else
               "acked write kept" if kept else "HOLE: acknowledged write lost")
    print(f"{case}: {verdict}")
    return not kept


def run(case, migrate, pre_create_new=True):
    setup(pre_create_new)
    refused = None
    try:
        migrate()
    except (psycopg2.Error, sa.exc.DBAPIError) as e:
        orig = getattr(e, "orig", e)
        refused = orig.pgcode
    return judge(case, refused)


def swap(cur):
    cur.execute("DROP TABLE t")
    cur.execute("ALTER TABLE t_new RENAME TO t")


def lazy_insert_select():
    # t_new made by an earlier migration; this one starts with the copy
    c = connect()
    cur = c.cursor()
    cur.execute("INSERT INTO t_new SELECT * FROM t")
    write_acked()
    swap(cur)
    c.commit()


def loaded_insert_select():  # control: the library loaded first
    c = connect()
    cur = c.cursor()
    cur.execute("SELECT '1'::fencing_token")
    cur.execute("INSERT INTO t_new SELECT * FROM t")
    write_acked()
    swap(cur)
    c.commit()


def copy_stdout_stdin():
    c = connect()
    cur = c.cursor()
    cur.execute("CREATE TABLE t_new (LIKE t INCLUDING ALL)")  # loads the library
    buf = io.StringIO()
    cur.copy_expert("COPY t TO STDOUT", buf)
    write_acked()
    buf.seek(0)
    cur.copy_expert("COPY t_new FROM STDIN", buf)
    swap(cur)
    c.commit()


def alembic_select_bulk_insert():
    eng = sa.create_engine(url)
    with eng.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        new = op.create_table("t_new", sa.Column("id", sa.Integer, primary_key=True),
                              sa.Column("v", sa.Text), sa.Column("tok", FencingToken()))
        rows = conn.execute(sa.text("SELECT id, v, tok::bigint AS tok FROM t")).mappings().all()
        write_acked()
        op.bulk_insert(new, [dict(r) for r in rows])
        op.drop_table("t")
        op.rename_table("t_new", "t")
    eng.dispose()


def alembic_second_revision():
    # revision 1 (an earlier run) created t_new; revision 2, in a fresh
    # process: Alembic reads alembic_version, then the migration's op.execute
    eng = sa.create_engine(url)
    with eng.begin() as conn:
        conn.exec_driver_sql("SELECT version_num FROM pg_catalog.pg_class, (SELECT 'r1'::text AS version_num) v LIMIT 1")
        op = Operations(MigrationContext.configure(conn))
        op.execute("INSERT INTO t_new SELECT * FROM t")
        write_acked()
        op.drop_table("t")
        op.rename_table("t_new", "t")
    eng.dispose()


holes = 0
holes += run("A1' fresh session, INSERT ... SELECT first (library not loaded)", lazy_insert_select)
holes += run("control: library loaded, INSERT ... SELECT", loaded_insert_select)
holes += run("A2' COPY TO STDOUT + COPY FROM STDIN (psycopg2)", copy_stdout_stdin, pre_create_new=False)
holes += run("A2'' Alembic op.create_table + SELECT + op.bulk_insert + drop/rename",
             alembic_select_bulk_insert, pre_create_new=False)
holes += run("A1'' Alembic op.execute(INSERT ... SELECT) in a fresh process, t_new from an earlier revision",
             alembic_second_revision)
print(f"holes: {holes}")
sys.exit(1 if holes else 0)
