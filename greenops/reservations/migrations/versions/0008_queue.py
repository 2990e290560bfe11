"""The queue: a request that no window has room for now, but could have before its deadline once
capacity or quota frees, is recorded as Pending (greenops.reservations.queue).

``priority`` is the value of the request's priority class (every booking keeps the class it was
decided in), ``queued_at`` when it joined the queue, ``admitted_at`` when it left it placed: the
queue's fairness serves first the tenant that holds least, then the one served least recently.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.add_column(sa.Column("priority", sa.Integer))
        batch.add_column(sa.Column("queued_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("admitted_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.drop_column("admitted_at")
        batch.drop_column("queued_at")
        batch.drop_column("priority")
