"""When each tenant's Pulumi stack was last seen, for the orphan sweep (greenops.reservations.orphans).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stacks",
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("stack", sa.String(256), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "stack", name="stacks_pkey"),
    )


def downgrade() -> None:
    op.drop_table("stacks")
