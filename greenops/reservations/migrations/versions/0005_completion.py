"""A run's own report of its end.

A placed VM whose workload runs a script reports, when the script ends, its exit status to the
scheduler with a credential scoped to its one reservation (greenops.reservations.completion):
``completion_token_sha256`` is that credential's digest (the token itself is handed out once and
never stored), ``completion`` what the run reported and when the scheduler received it.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.add_column(sa.Column("completion_token_sha256", sa.String(64)))
        batch.add_column(sa.Column("completion", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.drop_column("completion")
        batch.drop_column("completion_token_sha256")
