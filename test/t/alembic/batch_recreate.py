"""Alembic's batch_alter_table(recreate='always') on fenced tables, run as a
migration runs it (one transaction, Alembic's default on PostgreSQL).

Usage: batch_recreate.py DSN TABLE...  (each table is recreated with one
more column). Exits 1 with the error when the migration is refused."""
import sys

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy.types import UserDefinedType


class FencingToken(UserDefinedType):
    cache_ok = True

    def get_col_spec(self, **kw):
        return "fencing_token"


def main():
    dsn, tables = sys.argv[1], sys.argv[2:]
    engine = sa.create_engine(dsn)
    try:
        with engine.begin() as conn:
            op = Operations(MigrationContext.configure(conn))
            for table in tables:
                with op.batch_alter_table(
                        table, recreate="always",
                        reflect_args=[sa.Column("fence", FencingToken())]) as batch:
                    batch.add_column(sa.Column("extra", sa.Integer))
    except sa.exc.DBAPIError as e:
        print(str(e.orig).strip(), file=sys.stderr)
        return 1
    print("migrated: " + " ".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
