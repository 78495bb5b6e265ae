"""Real Alembic batch recreate losing an acknowledged write at an unchanged token.

op.batch_alter_table(recreate='always') copies the table, DROPs it and renames
the copy, in one transaction. A fenced writer that commits an UPDATE at the
token its row already holds between that copy and the DROP (here: fired from
a SQLAlchemy before_cursor_execute hook on the DROP, on a second connection)
was lost in 1.6's development (the recreate adopted without an error); the
DROP now compares the table as the copy saw it and refuses. Prints one line per scope,
"acked write kept", "HOLE: acknowledged write lost" or "no write
acknowledged" (the writer locked out); exits 1 when an acknowledged write is lost.

    /usr/bin/python3 test/migrations/alembic_same_token.py 'postgresql+psycopg2:///DB?host=SOCKDIR&port=PORT'
"""
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
eng = sa.create_engine(url)
writer = psycopg2.connect(eng.url.render_as_string(hide_password=False).replace("postgresql+psycopg2", "postgresql"))
writer.autocommit = True
holes = 0
for scope, pk in (("row", "PRIMARY KEY"), ("table", ""), ("resource", "")):
    name = f"al_{scope}"
    with eng.begin() as conn:  # its own transaction: a CREATE after it starts afresh
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {name}")
    with eng.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {name} (id int {pk}, shard text DEFAULT 's', v text, tok fencing_token)")
        if scope == "table":
            conn.exec_driver_sql(f"SELECT fencing_protect('{name}', 'tok', scope => 'table')")
        if scope == "resource":
            conn.exec_driver_sql(f"SELECT fencing_protect('{name}', 'tok', scope => 'resource',"
                                 " resource_column => 'shard', resource_namespace => 'attack33-al')")
        conn.exec_driver_sql(f"INSERT INTO {name} (id, shard, v, tok) VALUES (1, 'a', 'one', 10), (2, 'b', 'two', 20)")

    acked = [False]

    def before(conn, cursor, statement, params, context, executemany, name=name, acked=acked):
        if statement.strip().upper().startswith(f"DROP TABLE {name.upper()}"):
            # A table with a primary key is locked out from the batch's
            # DROP CONSTRAINT on: the writer then times out (held).
            with writer.cursor() as cur:
                try:
                    cur.execute("BEGIN; SET LOCAL lock_timeout = '3s'; SET LOCAL fencing.token = 20;"
                                f" UPDATE {name} SET v = 'ACKED' WHERE id = 2; COMMIT")
                    acked[0] = True
                except psycopg2.errors.LockNotAvailable:
                    cur.execute("ROLLBACK")
                    print(f"{scope}: writer locked out by the batch (nothing acknowledged)")

    sa.event.listen(eng, "before_cursor_execute", before)
    try:
        with eng.begin() as conn:
            op = Operations(MigrationContext.configure(conn))
            with op.batch_alter_table(name, recreate="always",
                                      reflect_args=[sa.Column("tok", FencingToken())]) as b:
                b.add_column(sa.Column("extra", sa.Integer))
    except sa.exc.DBAPIError as e:
        print(f"{scope}: recreate refused ({e.orig.pgcode}: {str(e.orig).splitlines()[0]})")
    sa.event.remove(eng, "before_cursor_execute", before)
    with eng.begin() as conn:
        kept = conn.exec_driver_sql(f"SELECT count(*) FROM {name} WHERE v = 'ACKED'").scalar()
    print(f"{scope}: " + ("acked write kept" if kept == 1 else
                          "HOLE: acknowledged write lost" if acked[0] else "no write acknowledged"))
    holes += kept != 1 and acked[0]
sys.exit(1 if holes else 0)
