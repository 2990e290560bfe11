"""The reservation record's tables (SQLAlchemy Core; the schema itself is made by Alembic).

vCPUs are stored in milli-vCPUs (integers), so booking and releasing the same amounts always sums
back to exactly zero: no float drift in a calendar that is incremented and decremented for days.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import JSON, Column, DateTime, Index, Integer, MetaData, PrimaryKeyConstraint, String, Table

metadata = MetaData()


def stored_utc(value: datetime) -> datetime:
    """A time read back from the record: SQLite hands back naive datetimes, and every time the store
    writes is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


# One row per tenant and placement key: what was asked, what was answered, and what happened since.
# A key is the tenant's own (migration 0006): a Pulumi-path key is predictable, and another tenant's
# booking of it is a reservation of that tenant's, never a claim on this one.
reservations = Table(
    "reservations",
    metadata,
    # the key alone is looked up too: a principal of several tenants may name a key without its tenant
    Column("key", String(512), nullable=False, index=True),
    Column("tenant", String(128), nullable=False),  # the primary key's first column: no index of its own
    Column("path", String(16), nullable=False),  # pulumi | cluster | api
    Column("phase", String(16), nullable=False, index=True),
    Column("spec_hash", String(64), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("milli_cpu", Integer, nullable=False),  # per job
    Column("jobs", Integer, nullable=False),
    Column("zone", String(64), nullable=False, index=True),
    Column("provider", String(16)),
    Column("region", String(64), index=True),
    Column("start_at", DateTime(timezone=True), nullable=False),
    Column("end_at", DateTime(timezone=True), nullable=False),
    Column("placements", JSON, nullable=False),  # [{zone, start, end}] epoch seconds, every job
    Column("request", JSON, nullable=False),
    Column("answer", JSON, nullable=False),
    Column("reason", String(1024)),
    # a cluster-path booking made at admission is a hold until its VmTemplate is seen stored; a
    # hold still unconfirmed at this time is released (forged or abandoned CREATEs cost nothing)
    Column("held_until", DateTime(timezone=True)),
    Column("lifecycle", JSON),  # the recorded phases and their real times (placement.lifecycle)
    # the digest of the credential the run reports its end with, and what it reported
    # (greenops.reservations.completion); both cleared by a new decision
    Column("completion_token_sha256", String(64)),
    Column("completion", JSON),
    # the value of its priority class (migration 0008); when it joined the queue (kept once
    # admitted) and when it left it placed. A Pending row holds no zone-hours: its placements are []
    # and its zone "", its start and end its search window (greenops.reservations.queue).
    Column("priority", Integer),
    Column("queued_at", DateTime(timezone=True)),
    Column("admitted_at", DateTime(timezone=True)),  # when it left the queue placed
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # the reservations still Scheduled past their start, read at every scrape (greenops.reservations.census)
    Index("ix_reservations_phase_start_at", "phase", "start_at"),
    PrimaryKeyConstraint("tenant", "key", name="reservations_pkey"),
)

# vCPUs booked per zone and hourly slot (hours since the epoch): the capacity calendar. Updated in
# the same transaction as the reservations, by conditional increments the database serialises.
slot_usage = Table(
    "slot_usage",
    metadata,
    Column("zone", String(64), primary_key=True),
    Column("slot", Integer, primary_key=True),
    Column("milli_cpu", Integer, nullable=False),
)

# When each tenant's Pulumi stack was last seen: a Pulumi pass over its placements marks it
# (PUT /stacks/{stack}). A stack not seen for the orphan grace leaves bookings nobody will release:
# the sweep releases them (greenops.reservations.orphans).
stacks = Table(
    "stacks",
    metadata,
    Column("tenant", String(128), nullable=False),
    Column("stack", String(256), nullable=False),
    Column("last_seen_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("tenant", "stack", name="stacks_pkey"),
)

# The provider regions an admin declared unavailable (an outage, a stock-out the provider
# announced): no booking is made in them while declared, and what is placed there fails over
# (greenops.reservations.outages). Lifting the declaration deletes the row.
outages = Table(
    "outages",
    metadata,
    Column("provider", String(16), nullable=False),
    Column("region", String(64), nullable=False),
    Column("reason", String(1024), nullable=False),
    Column("declared_by", String(128), nullable=False),  # the principal's name
    Column("declared_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("provider", "region", name="outages_pkey"),
)

# One row per tenant, locked while a booking of that tenant checks its quota.
tenants = Table(
    "tenants",
    metadata,
    Column("tenant", String(128), primary_key=True),
)

# The API tokens issued with `greenops token issue`: only a SHA-256 digest of each token is kept (a
# token is 256 random bits, so a digest cannot be reversed by guessing), with the principal it
# proves. A revoked token stays, so its id and name keep meaning something in the logs.
api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(128), nullable=False),
    Column("token_sha256", String(64), nullable=False, unique=True),
    Column("role", String(8), nullable=False),  # read | write | admin
    Column("tenants", JSON),  # a list; NULL: every tenant
    Column("paths", JSON, nullable=False),  # the paths it books and changes
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True)),
    Column("revoked_at", DateTime(timezone=True)),
)
