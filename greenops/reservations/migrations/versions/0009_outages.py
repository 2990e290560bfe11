"""The regions an admin declared unavailable (greenops.reservations.outages): nothing is booked in
them, and the placements there fail over.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outages",
        sa.Column("provider", sa.String(16), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("reason", sa.String(1024), nullable=False),
        sa.Column("declared_by", sa.String(128), nullable=False),
        sa.Column("declared_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("provider", "region", name="outages_pkey"),
    )


def downgrade() -> None:
    op.drop_table("outages")
