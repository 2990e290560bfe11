"""Preemption of waiting bookings, a policy choice (``preemption: waiting``; ``off`` by default).

A request that no window has room for may take the hours of Scheduled bookings of lower priority
classes, never of one that has begun: only a booking whose start is more than
``preemption_notice_minutes`` away, so its gate has not opened and nothing of it runs. Only
bookings of the Pulumi path and the API: a cluster-path decision is written into its VmTemplate by
admission alone, so taking its hours would leave the object saying otherwise. A Pulumi pass checks
the record at each gate (greenops.provider.placement): a preempted workload waits, never starts. The
search runs on the calendar without every such candidate; the window it finds then takes the
fewest candidates its hours need, lowest class first, then the most recently booked. In the same
transaction as the booking, each one taken goes back to the queue as Pending (its request, class
and deadline kept), with a reason that says when, by which class and why; the queue then places it
again as room frees, perhaps at once in another window. The reason names the class, never the
tenant or key that took the hours: a booking says nothing of another tenant's.

Only a fresh request preempts (not one the queue admits), and only for room, never for quota (a
tenant's quota is its own to spend). A booking is never preempted by its own class or a lower one,
so two requests cannot take each other's hours in turn.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from greenops.common.clock import parse_time, stamp
from greenops.reservations import Queued, ReservationStore, Seen
from greenops.reservations.slots import slots_of
from greenops.reservations.tables import stored_utc
from greenops.search.algorithm import Assignment, CapacityLedger

MAX_CANDIDATES = 200  # bookings weighed for one request at most
EPSILON = 1e-9  # vCPUs: what float sums of milli-vCPUs leave over


@dataclass(frozen=True)
class Preemptor:
    """Who asks for the hours: its class and value, its zones and window."""

    klass: tuple[str, int]
    zones: list[str]
    deadline: datetime
    notice: timedelta


def candidates(store: ReservationStore, who: Preemptor, now: datetime) -> list[dict[str, Any]]:
    """The bookings ``who`` may take the hours of, in the order they are taken."""
    return store.preemptible(who.zones, who.klass[1], now + who.notice, who.deadline, MAX_CANDIDATES)


def without(ledger: CapacityLedger, rows: list[dict[str, Any]]) -> CapacityLedger:
    """A copy of ``ledger`` with the hours of ``rows`` given back."""
    freed = ledger.copy()
    for row in rows:
        for p in row["placements"]:
            freed.release(p["zone"], p["start"], p["end"] - p["start"], row["milli_cpu"] / 1000)
    return freed


def taken(
    ledger: CapacityLedger, placements: list[Assignment], cpu: float, duration: float, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The fewest of ``rows``, in their order, whose hours ``placements`` need on ``ledger``: a row
    is taken when it holds an hour still short of room, until none is."""
    need: dict[tuple[str, int], float] = defaultdict(float)
    for p in placements:
        for slot in slots_of(p.start, p.start + duration):
            need[(p.zone, slot)] += cpu
    short = {h: ledger.at(*h) + n - ledger.capacity_vcpu for h, n in need.items()}
    short = {h: v for h, v in short.items() if v > EPSILON}
    chosen: list[dict[str, Any]] = []
    for row in rows:
        if not short:
            break
        hours = {(p["zone"], s) for p in row["placements"] for s in slots_of(p["start"], p["end"])} & short.keys()
        if not hours:
            continue
        chosen.append(row)
        for h in hours:
            short[h] -= row["milli_cpu"] / 1000
            if short[h] <= EPSILON:
                del short[h]
    return chosen


def requeued(row: dict[str, Any], klass_of: dict[int, str], who: Preemptor, now: datetime) -> tuple[Queued, Seen]:
    """``row`` as it waits in the queue again, and the version of it that was weighed."""
    request = row["request"]
    begin = max(now, parse_time(request["earliest_start"])) if request.get("earliest_start") else now
    mine = row["priority"]
    start = stored_utc(row["start_at"])
    reason = (
        f"preempted at {stamp(now)}: a request of priority class {who.klass[0]} ({who.klass[1]}) had no room, and "
        f"this booking's class {klass_of.get(mine, mine)} ({mine}) is lower; its start {stamp(start)} was more than "
        f"{int(who.notice.total_seconds() // 60)} min away, so nothing of it had begun; it waits in the queue again"
    )
    queued = Queued(
        key=row["key"],
        spec_hash=row["spec_hash"],
        tenant=row["tenant"],
        path=row["path"],
        milli_cpu=row["milli_cpu"],
        jobs=row["jobs"],
        request=request,
        answer={"phase": "Pending", "priority_class": klass_of.get(mine, str(mine)), "reason": reason},
        reason=reason,
        begin=begin.timestamp(),
        deadline=parse_time(request["deadline"]).timestamp(),
        priority=mine,
        max_per_tenant=0,  # not checked: it was admitted before
    )
    seen = Seen(
        row["revision"], True, tuple((p["zone"], p["start"], p["end"]) for p in row["placements"]), row["milli_cpu"]
    )
    return queued, seen
