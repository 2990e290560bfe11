"""The queue: requests recorded as Pending, in the order they are admitted.

A request that no window has room for now, but that could be placed before its deadline once
capacity or quota frees, waits as a Pending reservation of its key (``ReservationStore.enqueue``).
It holds no zone-hours and counts against no quota. The admission order is:
1. the higher priority class first;
2. within a class, fair across tenants: the next is the oldest request of the tenant that holds the
   fewest vCPUs, and of those the tenant served from the queue least recently; each pick counts as
   that tenant's (a tenant that sent a thousand cannot starve one that sent one);
3. a tenant's own requests, the older first.
A request's position is its place in that order, 1 for the next; it changes as others are admitted
and released, so it is read from the record when asked for, never stored.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from .store import PENDING, ReservationStore
from .tables import reservations, stored_utc

_NEVER = datetime.min.replace(tzinfo=UTC)


def waiting(store: ReservationStore, now: datetime) -> list[dict[str, Any]]:
    """Every Pending reservation, in admission order at ``now``."""
    with store.reading("queue") as conn:
        rows = [dict(r) for r in conn.execute(select(reservations).where(reservations.c.phase == PENDING)).mappings()]
    return in_admission_order(rows, store.shares(now) if rows else {}, now)


def in_admission_order(
    rows: list[dict[str, Any]], shares: dict[str, tuple[int, datetime | None]], now: datetime
) -> list[dict[str, Any]]:
    """``rows`` in admission order, with each tenant's (active milli-vCPUs, last admission) ``shares``."""
    classes: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in sorted(rows, key=lambda r: (_queued(r), r["key"])):
        classes[r["priority"] or 0][r["tenant"]].append(r)
    order = []
    held = {t: m for t, (m, _) in shares.items()}
    served = {t: at or _NEVER for t, (_, at) in shares.items()}
    for priority in sorted(classes, reverse=True):
        heads = classes[priority]
        # (held, last served, oldest waiting, tenant): the next tenant to serve is the heap's top
        turn: list[tuple[int, datetime, datetime, str]] = [
            (held.get(t, 0), served.get(t, _NEVER), _queued(rs[0]), t) for t, rs in heads.items()
        ]
        heapq.heapify(turn)
        nxt = dict.fromkeys(heads, 0)
        while turn:
            tenant = heapq.heappop(turn)[3]
            row = heads[tenant][nxt[tenant]]
            order.append(row)
            nxt[tenant] += 1
            held[tenant] = held.get(tenant, 0) + row["milli_cpu"] * row["jobs"]
            served[tenant] = now
            if nxt[tenant] < len(heads[tenant]):
                heapq.heappush(turn, (held[tenant], now, _queued(heads[tenant][nxt[tenant]]), tenant))
    return order


def positions(store: ReservationStore, now: datetime) -> dict[tuple[str, str], int]:
    """(tenant, key) -> position at ``now``, 1 for the next to be admitted."""
    return {(r["tenant"], r["key"]): i for i, r in enumerate(waiting(store, now), start=1)}


def _queued(row: dict[str, Any]) -> datetime:
    return stored_utc(row["queued_at"] or row["created_at"])
