"""Booking a decision in the reservation record, idempotently and without a global lock.

The search runs on a snapshot of the calendar with nothing locked; the booking is then committed
under the database's concurrency control, and the search runs again if somebody took the slot
first. A key already booked with the same request gets its stored answer back: a client's retry
never books twice. A key is its tenant's: everything here reads and writes the asking tenant's
reservation of it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from greenops.common.clock import parse_time
from greenops.observability import spans, tracing
from greenops.reservations import ACTIVE, Booking, Conflict, Queued, ReservationStore, Seen, milli
from greenops.reservations.slots import SLOT
from greenops.search.algorithm import Assignment, CapacityLedger, DecisionTimeout

MAX_ATTEMPTS = 25
# What does not change the placement a request asks for: a retry may send other values. The
# earliest start is the caller's clock, later on every retry: it is checked against the stored
# answer instead (see _replayed). The explanation is an account of the spec, not the spec.
# Whether it may wait in the queue is how to answer, not what to place.
_NOT_THE_SPEC = {"req_timeout", "key", "dry_run", "earliest_start", "explanation", "queue"}


def spec_hash(request: dict[str, Any]) -> str:
    spec = {k: v for k, v in request.items() if k not in _NOT_THE_SPEC}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Outcome:
    answer: dict[str, Any]
    replayed: bool  # the key was already booked with this request: nothing new was booked


@dataclass(frozen=True)
class Ask:
    """One request as the record sees it."""

    key: str
    request: dict[str, Any]  # the validated request, JSON-ready
    tenant: str
    path: str
    cpu: float
    duration: float  # seconds
    zones: list[str]
    begin: float
    deadline: float
    quota_vcpu: float | None
    regions: dict[str, str]
    dry_run: bool
    priority: int | None = None  # its priority class's value
    admitted: bool = False  # the queue's admitter books it (greenops.scheduler.queueing)


def replay(row: dict[str, Any] | None, request: dict[str, Any]) -> Outcome | None:
    """The stored answer when the key's ``row`` is an active booking of this very request."""
    if row is None:
        return None  # a new key (most bookings): no spec to hash
    return _replayed(row, spec_hash(request), request.get("earliest_start"))


def _replayed(row: dict[str, Any] | None, digest: str, earliest_start: str | None) -> Outcome | None:
    """A retry gets the booking it already has, unless its clock has passed that booking's start:
    then the booking no longer answers it (a missed window) and is replaced."""
    if row is None or row["phase"] not in ACTIVE or row["spec_hash"] != digest:
        return None
    if earliest_start is not None:
        not_before = parse_time(earliest_start).timestamp()
        if min(p["start"] for p in row["placements"]) < not_before:
            return None
    return Outcome(row["answer"], replayed=True)


def book(
    store: ReservationStore,
    ask: Ask,
    row: dict[str, Any] | None,
    capacity_vcpu: float,
    now: datetime,
    give_up_at: float,
    search: Callable[[CapacityLedger], list[Assignment]],
    answer_of: Callable[[list[Assignment]], dict[str, Any]],
    authorize: Callable[[dict[str, Any]], None] = lambda row: None,
    retried: Callable[[], None] = lambda: None,
    preempted: Callable[[list[Assignment]], Sequence[tuple[Queued, Seen]]] = lambda _: (),
) -> Outcome:
    """``row`` is the tenant's record of the key as the caller read it; after a conflict it is read again, and
    ``authorize`` (which raises to refuse) judges every version of it the booking could replace:
    the commit only replaces the revision that was judged. ``retried`` is told of every commit
    that met a conflict and is tried again. ``preempted`` names the bookings the search's placements
    take the hours of (greenops.scheduler.preemption): they go back to the queue in the commit."""
    digest = spec_hash(ask.request)
    first_slot, last_slot = int(ask.begin // SLOT), int(-(-ask.deadline // SLOT))
    capacity_milli = milli(capacity_vcpu) if capacity_vcpu != float("inf") else 2**62
    last_conflict = ""
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            row = store.get(ask.tenant, ask.key)
        if row is not None:
            authorize(row)
        if done := _replayed(row, digest, ask.request.get("earliest_start")):
            return done  # booked meanwhile by a retry that overtook this request
        seen = store.seen(row)
        ledger = _ledger(store.calendar(ask.zones, first_slot, last_slot, seen), capacity_vcpu)
        with tracing.tracer(__name__).start_as_current_span(
            spans.SEARCH, attributes={spans.ZONES: len(ask.zones), spans.ATTEMPT: attempt}
        ):
            placements = search(ledger)
        answer = answer_of(placements)
        if ask.dry_run:
            return Outcome(answer, replayed=False)
        provider, _, region = ask.regions.get(placements[0].zone, "").partition("/")
        booking = Booking(
            key=ask.key,
            spec_hash=digest,
            tenant=ask.tenant,
            path=ask.path,
            milli_cpu=milli(ask.cpu),
            placements=tuple((p.zone, p.start, p.start + ask.duration) for p in placements),
            request=ask.request,
            answer=answer,
            provider=provider or None,
            region=region or None,
            quota_milli=None if ask.quota_vcpu is None else milli(ask.quota_vcpu),
            priority=ask.priority,
            admitted=ask.admitted,
        )
        try:
            with tracing.tracer(__name__).start_as_current_span(
                spans.COMMIT, attributes={spans.KEY: ask.key, spans.TENANT: ask.tenant, spans.ZONE: placements[0].zone}
            ):
                taken = preempted(placements)
                return Outcome(store.commit(booking, seen, capacity_milli, now, taken), replayed=False)
        except Conflict as exc:
            last_conflict = str(exc)
            if time.monotonic() > give_up_at or attempt == MAX_ATTEMPTS - 1:
                break
            retried()
    raise DecisionTimeout(f"the calendar kept changing under this request ({last_conflict})")


def _ledger(calendar: dict[str, dict[int, int]], capacity_vcpu: float) -> CapacityLedger:
    used: dict[str, dict[int, float]] = defaultdict(dict)
    for zone, row in calendar.items():
        used[zone] = {slot: m / 1000 for slot, m in row.items()}
    return CapacityLedger(capacity_vcpu, used)
