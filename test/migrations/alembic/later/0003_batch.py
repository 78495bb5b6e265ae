"""batch recreate of the table- and resource-scope tables, as Alembic's docs write it

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

from models import FencingToken

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    # The token column's type is not one SQLAlchemy reflects: name it.
    for name in ("al_tab", "al_res"):
        with op.batch_alter_table(name, recreate="always",
                                  reflect_args=[sa.Column("fence", FencingToken())]) as b:
            b.add_column(sa.Column("extra", sa.Integer))


def downgrade():
    for name in ("al_tab", "al_res"):
        with op.batch_alter_table(name, recreate="always",
                                  reflect_args=[sa.Column("fence", FencingToken())]) as b:
            b.drop_column("extra")
