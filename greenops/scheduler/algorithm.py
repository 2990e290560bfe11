"""Carbon-aware placement in space and time.

For a job of duration D that must finish by a deadline, every eligible zone and every start time
in ``[now, deadline - D]`` is a candidate; the winner has the lowest mean forecast intensity over
the whole run (a window the size of the job, as the Carbon Aware SDK does). Because intensity is
piecewise constant, the window mean is piecewise linear in the start time, with breakpoints where
the window's start or end crosses a data point; checking those points (plus ``now`` and the latest
start) finds the exact optimum at the data's own resolution.

Capacity: each zone offers ``capacity_vcpu`` per hourly slot. A placement reserves its vCPUs in
every slot it overlaps, so a burst of jobs spreads over zones and times instead of piling into
the single greenest window (the "black hole").
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from greenops.errors import GreenOpsError
from greenops.scheduler.series import Series

SLOT = 3600.0


class NoFeasibleWindow(GreenOpsError):
    """No zone has a start time with free capacity before the deadline."""


class DecisionTimeout(GreenOpsError):
    """The decision could not be made within the caller's req_timeout."""


def slots_of(start: float, end: float) -> range:
    """The hourly slots (hours since the epoch) a run from ``start`` to ``end`` overlaps."""
    return range(int(start // SLOT), int(math.ceil(end / SLOT)))


@dataclass(frozen=True)
class Job:
    cpu: float
    memory: float
    duration: float  # seconds


@dataclass(frozen=True)
class Placement:
    zone: str
    start: float  # epoch seconds
    mean_intensity: float


@dataclass
class CapacityLedger:
    """vCPUs reserved per zone and hourly slot; ``capacity_vcpu`` is the limit of each slot."""

    capacity_vcpu: float = float("inf")
    _used: dict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))

    def used(self, zone: str, first_slot: int, n: int) -> np.ndarray:
        row = self._used.get(zone, {})
        return np.array([row.get(first_slot + i, 0.0) for i in range(n)], dtype=float)

    def reserve(self, zone: str, start: float, duration: float, cpu: float) -> None:
        row = self._used[zone]
        for slot in slots_of(start, start + duration):
            row[slot] = row.get(slot, 0.0) + cpu

    def forget_before(self, t: float) -> None:
        """Drop slots that ended before ``t`` (they can no longer constrain anything)."""
        last = int(t // SLOT)
        for row in self._used.values():
            for slot in [s for s in row if s < last]:
                del row[slot]


def candidate_starts(series: Series, earliest: float, latest: float, duration: float) -> np.ndarray:
    """Start times where the window mean can be minimal: the data points, the data points minus
    the duration, and both ends of the allowed range."""
    b = series.boundaries
    points = np.concatenate((b, b - duration, [earliest, latest]))
    points = points[(points >= earliest) & (points <= latest)]
    return np.unique(points)


def _feasible(ledger: CapacityLedger, zone: str, starts: np.ndarray, duration: float, cpu: float) -> np.ndarray:
    if math.isinf(ledger.capacity_vcpu):
        return np.ones(len(starts), dtype=bool)
    if cpu > ledger.capacity_vcpu:
        return np.zeros(len(starts), dtype=bool)
    first = int(starts.min() // SLOT)
    last = int(math.ceil((starts.max() + duration) / SLOT))
    full = ledger.used(zone, first, last - first) + cpu > ledger.capacity_vcpu
    blocked = np.concatenate(([0], np.cumsum(full)))
    a = (starts // SLOT).astype(int) - first
    z = np.ceil((starts + duration) / SLOT).astype(int) - first
    free: np.ndarray = (blocked[z] - blocked[a]) == 0
    return free


def best_placement(
    forecasts: dict[str, Series],
    job: Job,
    now: float,
    deadline: float,
    ledger: CapacityLedger | None = None,
    give_up_at: float | None = None,
    weighed: list[Placement] | None = None,
) -> Placement:
    """The (zone, start) with the lowest mean intensity over the run; ties go to the earliest
    start, then to the zone that sorts first, so equal inputs give equal answers. ``weighed``, when
    given, receives each zone's best window with room: the alternatives the answer beat."""
    latest = deadline - job.duration
    if latest < now:
        raise NoFeasibleWindow("the deadline leaves no time to run the job")
    ledger = ledger or CapacityLedger()
    best: tuple[float, float, str] | None = None
    for zone in sorted(forecasts):
        if give_up_at is not None and time.monotonic() > give_up_at:
            raise DecisionTimeout("the decision took longer than req_timeout")
        s = forecasts[zone]
        starts = candidate_starts(s, now, latest, job.duration)
        if len(starts) == 0:
            continue
        # rounded so that equal windows (a flat profile) tie exactly and the earliest start wins
        means = np.round(s.window_means(starts, job.duration), 9)
        ok = _feasible(ledger, zone, starts, job.duration, job.cpu)
        if not ok.any():
            continue
        means = np.where(ok, means, np.inf)
        i = int(np.argmin(means))  # argmin returns the first (earliest) minimum
        candidate = (float(means[i]), float(starts[i]), zone)
        if weighed is not None and np.isfinite(candidate[0]):
            weighed.append(Placement(zone, candidate[1], candidate[0]))
        if best is None or candidate < best:
            best = candidate
    if best is None:
        raise NoFeasibleWindow("every eligible zone is at capacity for every start before the deadline")
    return Placement(best[2], best[1], best[0])


def place_batch(
    forecasts: dict[str, Series],
    job: Job,
    n: int,
    now: float,
    deadline: float,
    ledger: CapacityLedger,
    give_up_at: float | None = None,
    weighed: list[Placement] | None = None,
) -> list[Placement]:
    """``n`` identical jobs, greedily: each takes the best window left by the ones before it.
    ``weighed`` receives what the first job weighed (see best_placement)."""
    out = []
    for i in range(n):
        p = best_placement(forecasts, job, now, deadline, ledger, give_up_at, weighed if i == 0 else None)
        ledger.reserve(p.zone, p.start, job.duration, job.cpu)
        out.append(p)
    return out


def search(
    forecasts: dict[str, Series],
    job: Job,
    n: int,
    now: float,
    deadline: float,
    ledger: CapacityLedger,
    give_up_at: float | None = None,
) -> tuple[list[Placement], list[Placement]]:
    """``place_batch``, and what its first job weighed: each zone's best window with room, best
    first (recorded with the answer, so a decision can be explained without recomputing it)."""
    weighed: list[Placement] = []
    placements = place_batch(forecasts, job, n, now, deadline, ledger, give_up_at, weighed)
    return placements, sorted(weighed, key=lambda p: (p.mean_intensity, p.start, p.zone))


def run_now_mean(series: Series, now: float, duration: float) -> float:
    """Mean intensity if the job started immediately (the baseline)."""
    return float(series.window_means(np.array([now]), duration)[0])
