"""batch recreate of the row-scope table (tombstones), as Alembic's docs write it

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

from models import FencingToken

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    # The token column's type is not one SQLAlchemy reflects: name it.
    for name in ("al_row",):
        with op.batch_alter_table(name, recreate="always",
                                  reflect_args=[sa.Column("fence", FencingToken())]) as b:
            b.add_column(sa.Column("extra", sa.Integer))


def downgrade():
    for name in ("al_row",):
        with op.batch_alter_table(name, recreate="always",
                                  reflect_args=[sa.Column("fence", FencingToken())]) as b:
            b.drop_column("extra")
