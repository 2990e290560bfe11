"""Re-optimising the bookings that have not started, with the requests that have just arrived.

One request at a time, the search gives each the best window left when it arrives; a flexible
request booked yesterday may hold the hours that an urgent one, arriving now, has no other good
choice for. An offline plan would place the least flexible first. ``reoptimise`` does that for what
can still move: the bookings whose gate has not opened (their start is more than ``lead`` away) are
given back and placed again together with the new arrivals, least slack first, each by the same
search (and scarcity price) as a new request.

What users rely on holds by construction:

- a booking whose gate has opened (or whose run started) is never touched;
- a waiting booking moves at most ``max_moves`` times, and never to a start within the gate's lead;
- it keeps its window while that still has room, unless the current forecast finds one cleaner by
  at least ``min_gain`` g/kWh: the churn is bounded, and a move is worth its notice;
- capacity is never exceeded: every placement is checked against the ledger; when a booking that
  must move finds no room before its deadline, the whole pass is undone and only the new arrivals
  are placed, as without re-optimisation;
- every move is returned with its reason, for the record and for ``greenops explain``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from greenops.intensity.series import Series
from greenops.search.algorithm import Assignment, CapacityLedger, Job, NoFeasibleWindow, decide, run_now_mean
from greenops.search.scarcity import ScarcityPrice

MAX_MOVES = 3  # per booking: after this many moves it stays where it is
MIN_GAIN = 1.0  # g/kWh: a voluntary move must be at least this much cleaner on the current forecast

DISPLACED = "its window went to requests with less slack; moved to the best window left"
CLEANER = "a cleaner window has room now"


@dataclass(frozen=True)
class Request:
    """A booking that has not started (``booked`` is its window), or a new arrival (``booked`` None)."""

    key: Hashable
    job: Job
    deadline: float  # epoch seconds: the run ends by then
    booked: Assignment | None = None
    moves: int = 0

    @property
    def latest_start(self) -> float:
        return self.deadline - self.job.duration


@dataclass(frozen=True)
class Move:
    key: Hashable
    before: Assignment
    after: Assignment
    reason: str


@dataclass(frozen=True)
class Pass:
    """What one re-optimisation decided: a window for each new arrival (those with none have no room
    before their deadline), and the waiting bookings that move."""

    placed: dict[Hashable, Assignment]
    unplaced: list[Hashable]
    moves: list[Move]


Forecasts = Callable[[Request, float], dict[str, Series]]  # a request's series, fetched at ``now``


def may_move(r: Request, now: float, lead: float, max_moves: int = MAX_MOVES) -> bool:
    """A waiting booking whose gate has not opened and that has moves left."""
    return r.booked is not None and r.booked.start - lead > now and r.moves < max_moves


def reoptimise(
    waiting: Sequence[Request],
    arrivals: Sequence[Request],
    forecasts: Forecasts,
    now: float,
    lead: float,
    ledger: CapacityLedger,
    price: ScarcityPrice | None = None,
    max_moves: int = MAX_MOVES,
    min_gain: float = MIN_GAIN,
) -> Pass:
    """Place ``arrivals`` and re-place the ``waiting`` bookings that may move (``may_move``); the
    ledger holds every booking on entry and every booking's final window on return."""
    movable = [w for w in waiting if may_move(w, now, lead, max_moves)]
    for w in movable:
        assert w.booked is not None
        ledger.release(w.booked.zone, w.booked.start, w.job.duration, w.job.cpu)
    done: list[tuple[Request, Assignment]] = []
    unplaced: list[Hashable] = []
    moves: list[Move] = []
    for r in sorted([*movable, *arrivals], key=_least_flexible_first):
        chosen, reason = _choose(r, forecasts, now, lead, ledger, price, min_gain)
        if chosen is None:
            if r.booked is not None:  # it must move and cannot: undo, and decide the arrivals alone
                _undo(done, movable, ledger)
                return reoptimise([], arrivals, forecasts, now, lead, ledger, price, max_moves, min_gain)
            unplaced.append(r.key)
            continue
        ledger.reserve(chosen.zone, chosen.start, r.job.duration, r.job.cpu)
        done.append((r, chosen))
        if r.booked is not None and (chosen.zone, chosen.start) != (r.booked.zone, r.booked.start):
            moves.append(Move(r.key, r.booked, chosen, reason))
    placed = {r.key: a for r, a in done if r.booked is None}
    return Pass(placed, unplaced, moves)


def _least_flexible_first(r: Request) -> tuple[float, float]:
    return (r.latest_start, -r.job.cpu * r.job.duration)


def _choose(
    r: Request,
    forecasts: Forecasts,
    now: float,
    lead: float,
    ledger: CapacityLedger,
    price: ScarcityPrice | None,
    min_gain: float,
) -> tuple[Assignment | None, str]:
    """The best window by the search, and why a waiting booking takes it: it keeps its own unless
    that is full now or the best is cleaner by ``min_gain``, and starts no sooner than the gate's
    lead from now."""
    series = forecasts(r, now)
    earliest = now if r.booked is None else now + lead
    try:
        best: Assignment | None = decide(series, r.job, earliest, r.deadline, ledger, price=price)
    except NoFeasibleWindow:
        best = None
    own = r.booked
    if own is None:
        return best, ""
    if not ledger.fits(own.zone, own.start, r.job.duration, r.job.cpu):
        return best, DISPLACED
    kept = Assignment(own.zone, own.start, _mean(series, own, r.job.duration))
    if best is None or best.mean_intensity > kept.mean_intensity - min_gain:
        return kept, ""
    return best, f"{CLEANER} ({kept.mean_intensity:.0f} -> {best.mean_intensity:.0f} g/kWh forecast)"


def _mean(series: dict[str, Series], a: Assignment, duration: float) -> float:
    if a.zone not in series:
        return a.mean_intensity
    return run_now_mean(series[a.zone], a.start, duration)


def _undo(done: list[tuple[Request, Assignment]], movable: list[Request], ledger: CapacityLedger) -> None:
    for r, a in done:
        ledger.release(a.zone, a.start, r.job.duration, r.job.cpu)
    for w in movable:
        assert w.booked is not None
        ledger.reserve(w.booked.zone, w.booked.start, w.job.duration, w.job.cpu)
