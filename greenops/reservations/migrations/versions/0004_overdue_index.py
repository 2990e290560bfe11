"""An index for the record's view of lateness.

The scheduler asks, at every scrape, which reservations are still Scheduled although their start
has passed: one range of this index, however many reservations the record keeps.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_reservations_phase_start_at", "reservations", ["phase", "start_at"])


def downgrade() -> None:
    op.drop_index("ix_reservations_phase_start_at", table_name="reservations")
