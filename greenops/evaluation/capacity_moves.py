"""The capacity scenario's re-optimising policy: greenops with the scarcity price, and every hour the
bookings that have not started placed again with the hour's arrivals (greenops.search.reoptimise).

The scenario's hours are its slots: arrivals come on the hour, a booking's gate opens at its start
(``lead`` 0), so at hour ``t`` a booking from ``t + 1`` on may still move and one from ``t`` may not.
The outcome is charged where every booking finally ran; ``moves`` counts the moves.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import cast

from greenops.evaluation.capacity import (
    LATE_HOURS,
    ZONES,
    Forecasts,
    Ledger,
    Outcome,
    Request,
    Traces,
)
from greenops.intensity.series import Series
from greenops.search import reoptimise as ro
from greenops.search.algorithm import CapacityLedger, Job
from greenops.search.scarcity import ScarcityPrice, Urgent, UrgentOutlook

H = 3600


def run_reoptimised(
    policy: str,
    requests: list[Request],
    traces: Traces,
    forecasts: Forecasts,
    capacity: float,
    price: ScarcityPrice,
    history: list[Request],
    max_moves: int = ro.MAX_MOVES,
) -> Outcome:
    ledger = CapacityLedger(capacity)
    outlook = UrgentOutlook(
        [Urgent(traces.epoch(r.arrival), r.duration * H, r.cpu) for r in history if r.slack == 0],
        known_since=traces.epoch(min(r.arrival for r in history)),
    )
    price = replace(price, outlook=outlook)
    arriving: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(requests):
        arriving[r.arrival].append(i)
    booked: dict[int, ro.Request] = {}  # the bookings not yet started, by request index
    final: dict[int, tuple[str, int]] = {}
    moves = 0

    def series(q: ro.Request, now: float) -> dict[str, Series]:
        return forecasts.at(_hour(traces, now), requests[cast(int, q.key)].deadline)

    for hour in range(max(arriving) + 1):
        now = traces.epoch(hour)
        for i in [i for i, q in booked.items() if q.booked is not None and q.booked.start <= now]:
            del booked[i]  # its gate has opened: from here on it is what ran
        new = {i: _request(i, requests[i], traces) for i in arriving.get(hour, [])}
        step = ro.reoptimise(list(booked.values()), list(new.values()), series, now, 0.0, ledger, price, max_moves)
        for m in step.moves:
            i = cast(int, m.key)  # the scenario keys its requests by index
            booked[i] = replace(booked[i], booked=m.after, moves=booked[i].moves + 1)
            final[i] = (m.after.zone, _hour(traces, m.after.start))
            moves += 1
        for key, a in step.placed.items():
            i = cast(int, key)
            booked[i] = replace(new[i], booked=a)
            final[i] = (a.zone, _hour(traces, a.start))
        for key in step.unplaced:  # nothing before its deadline: the earliest hour with room, late
            i = cast(int, key)
            zone, start = _earliest_late(ledger, traces, requests[i])
            ledger.reserve(zone, traces.epoch(start), requests[i].duration * H, requests[i].cpu)
            final[i] = (zone, start)
        for r in (requests[i] for i in arriving.get(hour, [])):
            if r.slack == 0:
                outlook.add(Urgent(now, r.duration * H, r.cpu))
    return _outcome(policy, requests, final, traces, capacity, moves)


def _hour(traces: Traces, epoch: float) -> int:
    return round((epoch - traces.first.timestamp()) / H)


def _request(i: int, r: Request, traces: Traces) -> ro.Request:
    return ro.Request(i, Job(r.cpu, 1, r.duration * H), traces.epoch(r.deadline))


def _earliest_late(ledger: CapacityLedger, traces: Traces, r: Request) -> tuple[str, int]:
    for start in range(r.latest_start + 1, r.latest_start + LATE_HOURS + 1):
        for zone in ZONES:
            if ledger.fits(zone, traces.epoch(start), r.duration * H, r.cpu):
                return zone, start
    raise ValueError(f"request {r}: no room in the {LATE_HOURS} hours past its latest start")


def _outcome(
    policy: str, requests: list[Request], final: dict[int, tuple[str, int]], traces: Traces, capacity: float, moves: int
) -> Outcome:
    """Where everything ran, each booking checked against the capacity once more (a policy's bug
    stops the scenario: Ledger.book raises)."""
    check = Ledger(capacity, max(r.latest_start for r in requests) + LATE_HOURS + 13)
    out = Outcome(policy, moves=moves)
    for i, r in enumerate(requests):
        zone, start = final[i]
        check.book(zone, start, r)
        out.add(traces, r, zone, start)
    return out
