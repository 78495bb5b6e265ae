"""Alembic environment: the database of the libpq environment, one
transaction per run (Alembic's default on PostgreSQL)."""
import os

import sqlalchemy as sa
from alembic import context

from models import metadata


def url():
    e = os.environ
    return (f"postgresql+psycopg2://{e.get('PGUSER', 'postgres')}@/{e['PGDATABASE']}"
            f"?host={e['PGHOST']}&port={e['PGPORT']}")


def include_object(obj, name, type_, reflected, compare_to):
    # Only the tables of models.py (not the suite's bookkeeping, not the extension's).
    return type_ != "table" or name in metadata.tables


engine = sa.create_engine(url())
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=metadata,
                      include_object=include_object)
    with context.begin_transaction():
        context.run_migrations()
