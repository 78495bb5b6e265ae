"""the three fenced tables: row, table and resource scope

Revision ID: 0001
"""
import sqlalchemy as sa
from alembic import op

from models import FencingToken

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    for name, extra in (("al_row", []), ("al_tab", []),
                        ("al_res", [sa.Column("shard", sa.Text, nullable=False)])):
        op.create_table(name, sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
                        *extra, sa.Column("v", sa.BigInteger), sa.Column("fence", FencingToken))
    op.execute("SELECT fencing_protect('al_tab', scope => 'table')")
    op.execute("SELECT fencing_protect('al_res', scope => 'resource', resource_column => 'shard',"
               " resource_namespace => 'mig_' || current_database())")


def downgrade():
    for name in ("al_res", "al_tab", "al_row"):
        op.drop_table(name)
