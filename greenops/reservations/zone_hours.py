"""The capacity calendar's zone-hours: what a booking changes in them, applied under capacity.

A booking adds its milli-vCPUs to every (zone, hourly slot) its runs overlap; replacing or ending a
booking gives its own back. The changes are applied in (zone, slot) order, the order in which every
transaction locks zone-hours, so concurrent bookings on PostgreSQL never deadlock. Each run of
additions is one statement: it creates the zone-hours still missing, adds to the others only
where they stay within capacity (``INSERT … ON CONFLICT DO UPDATE … WHERE``), and returns those it
changed, so a zone-hour that filled up meanwhile is named without reading the calendar again.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, and_, bindparam, update
from sqlalchemy.dialects import postgresql, sqlite

from greenops.reservations.slots import slots_of

from .errors import Conflict
from .tables import slot_usage

ZoneHour = tuple[str, int]  # (zone, hourly slot: hours since the epoch)


def deltas(placements: Iterable[tuple[str, float, float]], milli_cpu: int) -> dict[ZoneHour, int]:
    """milli-vCPUs per zone-hour for runs of ``milli_cpu`` each at ``placements`` (zone, start, end)."""
    out: dict[ZoneHour, int] = defaultdict(int)
    for zone, start, end in placements:
        for s in slots_of(start, end):
            out[(zone, s)] += milli_cpu
    return out


def apply(conn: Connection, changes: dict[ZoneHour, int], capacity_milli: int) -> None:
    """Change the zone-hours by ``changes`` inside the caller's write transaction. A zone-hour that
    would go over capacity raises Conflict: the caller rolls back and searches again."""
    keys = sorted(k for k, d in changes.items() if d != 0)
    if any(changes[k] > capacity_milli for k in keys):
        raise Conflict("one booking alone is above a zone-hour's capacity")
    # a booking's own hours given back and its new ones may interleave: one statement per run of one
    # kind keeps the order of the locks
    for adding, run in itertools.groupby(keys, key=lambda k: changes[k] > 0):
        rows = [{"z": z, "s": s, "d": changes[(z, s)]} for z, s in run]
        if adding:
            _add(conn, rows, capacity_milli)
        else:
            # a zone-hour given back that was already pruned (it had passed) is not brought back
            conn.execute(_GIVE_BACK, rows)


def _add(conn: Connection, rows: list[dict[str, Any]], capacity_milli: int) -> None:
    added = conn.execute(_ADD[conn.dialect.name], [{**r, "cap": capacity_milli} for r in rows])
    done = {(zone, slot) for zone, slot in added}
    full = [(r["z"], r["s"]) for r in rows if (r["z"], r["s"]) not in done]
    if full:
        raise Conflict(f"zone {full[0][0]} hour {full[0][1]} filled up meanwhile")


def _adding(insert: Any) -> Any:
    """The addition for one dialect's INSERT: one statement for any number of zone-hours (SQLAlchemy
    sends the rows as one multi-row VALUES, in the order given)."""
    new = insert(slot_usage).values(zone=bindparam("z"), slot=bindparam("s"), milli_cpu=bindparam("d"))
    grown = slot_usage.c.milli_cpu + new.excluded.milli_cpu
    return new.on_conflict_do_update(
        index_elements=[slot_usage.c.zone, slot_usage.c.slot],
        set_={"milli_cpu": grown},
        where=grown <= bindparam("cap"),
    ).returning(slot_usage.c.zone, slot_usage.c.slot)


_ADD = {"postgresql": _adding(postgresql.insert), "sqlite": _adding(sqlite.insert)}
_GIVE_BACK = (
    update(slot_usage)
    .where(and_(slot_usage.c.zone == bindparam("z"), slot_usage.c.slot == bindparam("s")))
    .values(milli_cpu=slot_usage.c.milli_cpu + bindparam("d"))
)
