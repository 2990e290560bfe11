"""The reservation record: reservations, the capacity calendar and the tenant lock rows.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reservations",
        sa.Column("key", sa.String(512), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False, index=True),
        sa.Column("path", sa.String(16), nullable=False),
        sa.Column("phase", sa.String(16), nullable=False, index=True),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("milli_cpu", sa.Integer, nullable=False),
        sa.Column("jobs", sa.Integer, nullable=False),
        sa.Column("zone", sa.String(64), nullable=False, index=True),
        sa.Column("provider", sa.String(16)),
        sa.Column("region", sa.String(64), index=True),
        sa.Column("start_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("placements", sa.JSON, nullable=False),
        sa.Column("request", sa.JSON, nullable=False),
        sa.Column("answer", sa.JSON, nullable=False),
        sa.Column("reason", sa.String(1024)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "slot_usage",
        sa.Column("zone", sa.String(64), primary_key=True),
        sa.Column("slot", sa.Integer, primary_key=True),
        sa.Column("milli_cpu", sa.Integer, nullable=False),
    )
    op.create_table("tenants", sa.Column("tenant", sa.String(128), primary_key=True))


def downgrade() -> None:
    op.drop_table("tenants")
    op.drop_table("slot_usage")
    op.drop_table("reservations")
