"""What the record says at one instant, for gauges read at scrape time: reservations by phase, each
zone's busiest coming hour, and the reservations whose start has passed while still Scheduled.

Three aggregate queries in one read, each answered from an index (phase; phase and start; the
calendar's primary key), so a scrape costs the same at ten reservations or ten thousand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, cast

from sqlalchemy import and_, func, select

from greenops.reservations.slots import SLOT

from .tables import reservations, slot_usage, stored_utc

if TYPE_CHECKING:
    from .store import ReservationStore


@dataclass(frozen=True)
class Overdue:
    count: int
    oldest_start: datetime


@dataclass(frozen=True)
class Census:
    phases: dict[str, int]  # only the phases some reservation has
    busiest: dict[str, int]  # zone -> milli-vCPUs booked in its busiest hour from the current one on
    overdue: dict[str, Overdue]  # path -> its reservations still Scheduled after their start


def census(store: ReservationStore, now: datetime) -> Census:
    """The record at ``now``. A reservation is overdue from its start (why not from its gate:
    greenops.observability.names, OVERDUE_GATES)."""
    phase, path = reservations.c.phase, reservations.c.path
    with store.reading("census") as conn:
        phases = conn.execute(select(phase, func.count()).group_by(phase)).all()
        busiest = conn.execute(
            select(slot_usage.c.zone, func.max(slot_usage.c.milli_cpu))
            .where(slot_usage.c.slot >= int(now.timestamp() // SLOT))
            .group_by(slot_usage.c.zone)
        ).all()
        overdue = conn.execute(
            select(path, func.count(), func.min(reservations.c.start_at))
            .where(and_(phase == "Scheduled", reservations.c.start_at < now))
            .group_by(path)
        ).all()
    return Census(
        phases=dict(cast("Iterable[tuple[str, int]]", phases)),
        busiest=dict(cast("Iterable[tuple[str, int]]", busiest)),
        overdue={p: Overdue(n, stored_utc(t)) for p, n, t in cast("Iterable[tuple[str, int, datetime]]", overdue)},
    )
