"""Keys belong to tenants: a reservation is identified by (tenant, key).

A Pulumi-path key is predictable (``<stack>/<workload>/<spec digest>``), so with the key alone as
the primary key another tenant could book it first, and the rightful tenant's booking was refused
by naming who held it. Every row already records its tenant, so the rows carry over unchanged; only
the primary key becomes (tenant, key). The key alone gets an index (a principal of several tenants
names a key without its tenant); the tenant's own index is the primary key's first column now.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

PK = "reservations_pkey"  # PostgreSQL's name for the first primary key; SQLite names none


def _as_of_0005(primary_key: list[str], index: str) -> sa.Table:
    """The reservations table as revisions 0001 to 0005 made it, but with ``primary_key`` and an
    index on ``index``: the table SQLite's batch mode makes and copies every row into. (Reflected,
    the key column would keep its primary-key flag in the copy, beside the new primary key.)"""
    return sa.Table(
        "reservations",
        sa.MetaData(),
        sa.Column("key", sa.String(512), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("path", sa.String(16), nullable=False),
        sa.Column("phase", sa.String(16), nullable=False),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("milli_cpu", sa.Integer, nullable=False),
        sa.Column("jobs", sa.Integer, nullable=False),
        sa.Column("zone", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(16)),
        sa.Column("region", sa.String(64)),
        sa.Column("start_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("placements", sa.JSON, nullable=False),
        sa.Column("request", sa.JSON, nullable=False),
        sa.Column("answer", sa.JSON, nullable=False),
        sa.Column("reason", sa.String(1024)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("held_until", sa.DateTime(timezone=True)),
        sa.Column("lifecycle", sa.JSON),
        sa.Column("completion_token_sha256", sa.String(64)),
        sa.Column("completion", sa.JSON),
        sa.PrimaryKeyConstraint(*primary_key, name=PK),
        sa.Index(f"ix_reservations_{index}", index),
        sa.Index("ix_reservations_phase", "phase"),
        sa.Index("ix_reservations_zone", "zone"),
        sa.Index("ix_reservations_region", "region"),
        sa.Index("ix_reservations_phase_start_at", "phase", "start_at"),
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # in place: PostgreSQL changes a primary key without copying the table
        op.drop_constraint(PK, "reservations", type_="primary")
        op.create_primary_key(PK, "reservations", ["tenant", "key"])
        op.drop_index("ix_reservations_tenant", table_name="reservations")
        op.create_index("ix_reservations_key", "reservations", ["key"])
        return
    # SQLite changes no primary key in place: batch mode copies the rows into a table made anew
    copied = _as_of_0005(["tenant", "key"], "key")
    with op.batch_alter_table("reservations", recreate="always", copy_from=copied):
        pass


def downgrade() -> None:
    # only while no key is held by two tenants: the old primary key refuses that
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_reservations_key", table_name="reservations")
        op.create_index("ix_reservations_tenant", "reservations", ["tenant"])
        op.drop_constraint(PK, "reservations", type_="primary")
        op.create_primary_key(PK, "reservations", ["key"])
        return
    with op.batch_alter_table("reservations", recreate="always", copy_from=_as_of_0005(["key"], "tenant")):
        pass
