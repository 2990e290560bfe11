"""Cluster-path holds and recorded lifecycles.

A booking made at admission is a hold (``held_until`` set) until the controller sees its
VmTemplate stored; a hold nobody confirms by then is released. ``lifecycle`` keeps the times that
really happened (gate opened, running since, completed), as the controller observed them.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.add_column(sa.Column("held_until", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("lifecycle", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.drop_column("lifecycle")
        batch.drop_column("held_until")
