"""Real Alembic batch recreate, in REPEATABLE READ (the database's default),
with a fenced UPDATE that commits after the migration's snapshot and before
its first DDL (DROP CONSTRAINT). Then a stale write at 60."""
import sys
import psycopg2
import sqlalchemy as sa
from sqlalchemy import event
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.types import UserDefinedType

class FencingToken(UserDefinedType):
    cache_ok = True
    def get_col_spec(self, **kw):
        return "fencing_token"

dsn, iso, scope = sys.argv[1], sys.argv[2], sys.argv[3]
when = sys.argv[4] if len(sys.argv) > 4 else "first"
pk = sys.argv[5] if len(sys.argv) > 5 else "pk"
raw = psycopg2.connect(dsn.replace("postgresql://", "postgres://")); raw.autocommit = True
c = raw.cursor()
c.execute("DROP TABLE IF EXISTS ab")
c.execute("CREATE TABLE ab (id int %s, v text, fence fencing_token)" % ("PRIMARY KEY" if pk == "pk" else "NOT NULL"))
c.execute("SET lock_timeout = '3s'")
if scope != "row":
    c.execute("SELECT fencing_protect('ab', scope => %s)", (scope,))
c.execute("INSERT INTO ab VALUES (1, 'one', 5), (2, 'two', 5), (3, 'three', 5)")
c.execute("BEGIN; SET LOCAL fencing.token = 9; DELETE FROM ab WHERE id = 3; COMMIT") if pk == "pk" else None
fired = []
engine = sa.create_engine(dsn, isolation_level=iso)
@event.listens_for(engine, "before_cursor_execute")
def writer(conn, cursor, statement, params, context, executemany):
    if not fired and statement.lstrip().upper().startswith(("ALTER TABLE", "CREATE TABLE") if when == "first" else ("DROP TABLE",)):
        fired.append(statement.split("\n")[0])
        c.execute("BEGIN; SET LOCAL fencing.token = 100; UPDATE ab SET v = 'at 100' WHERE id = 1; COMMIT")
try:
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        with op.batch_alter_table("ab", recreate="always",
                                  reflect_args=[sa.Column("fence", FencingToken())]) as batch:
            batch.add_column(sa.Column("extra", sa.Integer))
    print("migrated; writer fired before:", fired)
except sa.exc.DBAPIError as e:
    print("migration refused:", str(e.orig).strip().splitlines()[0])
c.execute("SELECT id, v, fence::text FROM ab ORDER BY id"); print("rows:", c.fetchall())
try:
    c.execute("BEGIN; SET LOCAL fencing.token = 60; UPDATE ab SET v = 'stale at 60' WHERE id = 1; COMMIT")
    c.execute("SELECT id, v, fence::text FROM ab WHERE id = 1"); print("STALE ACCEPTED:", c.fetchall())
except psycopg2.Error as e:
    raw.rollback() if not raw.autocommit else c.execute("ROLLBACK")
    print("stale refused:", e.pgcode)
