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

Rules (``decide``). ``point``, the default, trusts the point forecast: the lowest forecast mean
wins. The other two move a job away from its default run (the earliest start, at the origin) only
when the expected gain beats the forecast's uncertainty, in the spirit of uncertainty-aware shifting
(e.g. UQ-Advice, 2025): wait only when sure enough.

- ``sure`` judges the forecast by its record on this very decision: the same request replayed on
  the forecasts issued one, two, ... ``TRACK_DAYS`` days earlier (``sources.track``), each charged
  what then really happened. The job moves only if the mean realised gain of those moves exceeds
  its standard error (``sure_enough``). It measures the uncertainty of the *decision*, selection
  included: the best of many noisy windows is too good to be true in a way no per-hour interval
  shows, and on the Let's Wait Awhile traces this is what keeps a poor forecaster from doing worse
  than not moving (greenops/evaluation/README.md).
- ``interval`` uses the source's prediction intervals (``bands``): the job moves only when the
  pessimistic end of the chosen window's interval is below the optimistic end of the default's
  (``worth_moving``). Per-hour intervals carry the day-to-day level error that both windows share, so
  this rule is the more cautious one.

Without a record (a source that cannot replay its past) ``sure`` keeps the default run; without
bands ``interval`` acts as ``point`` (no uncertainty claimed).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from greenops.common.errors import GreenOpsError
from greenops.intensity.base import Bands
from greenops.intensity.series import Series
from greenops.reservations.slots import SLOT, slots_of
from greenops.search.scarcity import ScarcityPrice
from greenops.search.spans import Spans

Rule = Literal["point", "interval", "sure"]
RULES: tuple[Rule, ...] = ("point", "interval", "sure")
TRACK_DAYS = 28  # how many earlier days of the same decision the sure rule replays
MIN_TRACK = 14  # fewer replayed decisions than this say nothing: stay at the default run
SURE_Z = 1.0  # the mean realised gain must exceed this many standard errors


class NoFeasibleWindow(GreenOpsError):
    """No zone has a start time with free capacity before the deadline."""


class DecisionTimeout(GreenOpsError):
    """The decision could not be made within the caller's req_timeout."""


@dataclass(frozen=True)
class Job:
    cpu: float
    memory: float
    duration: float  # seconds


@dataclass(frozen=True)
class Assignment:
    """One job's zone and start, as the search chose them, and the mean intensity expected there.
    (Not the Pulumi resource ``Placement`` of greenops.provider, which books one.)"""

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
        if len(row) >= n:
            return np.array([row.get(first_slot + i, 0.0) for i in range(n)], dtype=float)
        # a calendar is mostly free: walk the hours booked, not every hour of the horizon
        out = np.zeros(n)
        for slot, vcpu in row.items():
            if first_slot <= slot < first_slot + n:
                out[slot - first_slot] = vcpu
        return out

    def booked(self, zone: str) -> bool:
        """Whether any hour of ``zone`` has a reservation (a zone without one fits any job that fits a slot)."""
        return any(self._used.get(zone, {}).values())

    def reserve(self, zone: str, start: float, duration: float, cpu: float) -> None:
        row = self._used[zone]
        for slot in slots_of(start, start + duration):
            row[slot] = row.get(slot, 0.0) + cpu

    def release(self, zone: str, start: float, duration: float, cpu: float) -> None:
        """Undo ``reserve`` (a booking that moves gives its hours back first)."""
        row = self._used[zone]
        for slot in slots_of(start, start + duration):
            left = row.get(slot, 0.0) - cpu
            if left > 1e-9:
                row[slot] = left
            else:
                row.pop(slot, None)

    def copy(self) -> CapacityLedger:
        return CapacityLedger(self.capacity_vcpu, defaultdict(dict, {z: dict(r) for z, r in self._used.items()}))

    def at(self, zone: str, slot: int) -> float:
        """vCPUs reserved in one hour of ``zone``."""
        return self._used.get(zone, {}).get(slot, 0.0)

    def fits(self, zone: str, start: float, duration: float, cpu: float) -> bool:
        """Whether one run from ``start`` has room in every hour it overlaps."""
        return bool(_feasible(self, zone, np.array([start]), duration, cpu)[0])

    def forget_before(self, t: float) -> None:
        """Drop slots that ended before ``t`` (they can no longer constrain anything)."""
        last = int(t // SLOT)
        for row in self._used.values():
            for slot in [s for s in row if s < last]:
                del row[slot]


def candidates(series: Series, earliest: float, latest: float, duration: float) -> tuple[np.ndarray, np.ndarray]:
    """Start times where the window mean can be minimal: the data points, the data points minus
    the duration, and both ends of the allowed range; sorted and distinct. With the window mean
    from each (the series keeps those of its breakpoints: only the two ends are worked out here)."""
    if latest < earliest:
        return np.empty(0), np.empty(0)
    if latest == earliest:
        at = np.array([earliest], dtype=float)
        return at, series.window_means(at, duration)
    # the series' breakpoints are sorted and distinct already: the range's inside is a slice of
    # them, between the range's two ends (each once, however many breakpoints equal it)
    points, means = series.breakpoints(duration)
    i, j = np.searchsorted(points, earliest, "right"), np.searchsorted(points, latest, "left")
    ends = series.window_means(np.array([earliest, latest]), duration)
    starts: np.ndarray = np.concatenate(([earliest], points[i:j], [latest]))
    return starts, np.concatenate((ends[:1], means[i:j], ends[1:]))


def candidate_starts(series: Series, earliest: float, latest: float, duration: float) -> np.ndarray:
    """The start times of ``candidates``."""
    return candidates(series, earliest, latest, duration)[0]


def _feasible(ledger: CapacityLedger, zone: str, starts: np.ndarray, duration: float, cpu: float) -> np.ndarray:
    if math.isinf(ledger.capacity_vcpu):
        return np.ones(len(starts), dtype=bool)
    if cpu > ledger.capacity_vcpu:
        return np.zeros(len(starts), dtype=bool)
    if not ledger.booked(zone):
        return np.ones(len(starts), dtype=bool)
    spans = Spans.of(starts, duration)
    full = ledger.used(zone, spans.first, spans.count) + cpu > ledger.capacity_vcpu
    free: np.ndarray = spans.sums(full) == 0
    return free


def best_placement(
    forecasts: dict[str, Series],
    job: Job,
    now: float,
    deadline: float,
    ledger: CapacityLedger | None = None,
    give_up_at: float | None = None,
    weighed: list[Assignment] | None = None,
    price: ScarcityPrice | None = None,
) -> Assignment:
    """The (zone, start) with the lowest mean intensity over the run; ties go to the earliest
    start, then to the zone that sorts first, so equal inputs give equal answers. ``weighed``, when
    given, receives each zone's best window with room: the alternatives the answer beat. With
    ``price``, each window also pays the scarcity price of the hours it would fill
    (greenops.search.scarcity), scaled by the spread of the windows' means; the answer's
    ``mean_intensity`` stays the forecast's."""
    latest = deadline - job.duration
    if latest < now:
        raise NoFeasibleWindow("the deadline leaves no time to run the job")
    ledger = ledger or CapacityLedger()
    fitting: list[tuple[str, np.ndarray, np.ndarray]] = []
    for zone in sorted(forecasts):
        if give_up_at is not None and time.monotonic() > give_up_at:
            raise DecisionTimeout("the decision took longer than req_timeout")
        starts, means = candidates(forecasts[zone], now, latest, job.duration)
        if len(starts) == 0:
            continue
        # rounded so that equal windows (a flat profile) tie exactly and the earliest start wins
        means = np.round(means, 9)
        ok = _feasible(ledger, zone, starts, job.duration, job.cpu)
        if ok.any():
            fitting.append((zone, starts, np.where(ok, means, np.inf)))
    scale = _spread(fitting) if price is not None else 0.0
    best: tuple[float, float, str, float] | None = None
    for zone, starts, means in fitting:
        score = means
        if price is not None and scale > 0:
            score = np.round(means + scale * price.of(ledger, zone, starts, job.duration, job.cpu, now), 9)
        i = int(np.argmin(score))  # argmin returns the first (earliest) minimum
        candidate = (float(score[i]), float(starts[i]), zone, float(means[i]))
        if weighed is not None:
            weighed.append(Assignment(zone, candidate[1], candidate[3]))
        if best is None or candidate[:3] < best[:3]:
            best = candidate
    if best is None:
        raise NoFeasibleWindow("every eligible zone is at capacity for every start before the deadline")
    return Assignment(best[2], best[1], best[3])


def _spread(fitting: list[tuple[str, np.ndarray, np.ndarray]]) -> float:
    """The worst minus the best mean of the windows with room: what the request stands to gain."""
    finite = [m[np.isfinite(m)] for _, _, m in fitting]
    values = np.concatenate(finite) if finite else np.empty(0)
    return float(values.max() - values.min()) if values.size else 0.0


def window_bounds(bands: Bands | None, p: Assignment, duration: float) -> tuple[float, float]:
    """The interval of ``p``'s window mean: the mean of the lower and of the upper band over the run
    (errors of neighbouring hours move together, so their bounds are averaged, not shrunk). Without
    bands, the point forecast itself."""
    if bands is None:
        return p.mean_intensity, p.mean_intensity
    at = np.array([p.start])
    return float(bands.lower.window_means(at, duration)[0]), float(bands.upper.window_means(at, duration)[0])


def worth_moving(best: Assignment, default: Assignment, bands: dict[str, Bands | None], duration: float) -> bool:
    """Whether the forecast is sure enough that ``best`` beats ``default``: the expected gain
    (``default`` minus ``best``, point forecasts) exceeds the uncertainty against it (how much
    higher ``best`` may turn out, plus how much lower ``default`` may), i.e. the upper bound of
    ``best``'s window is below the lower bound of ``default``'s. Without bands for either zone the
    uncertainty is unknown, not zero, so nothing moves (a zone without intervals is no safer)."""
    if (best.zone, best.start) == (default.zone, default.start):
        return False
    if bands.get(best.zone) is None or bands.get(default.zone) is None:
        return False
    _, best_high = window_bounds(bands.get(best.zone), best, duration)
    default_low, _ = window_bounds(bands.get(default.zone), default, duration)
    gain = default.mean_intensity - best.mean_intensity
    # (a biased model's bound can sit on the wrong side of its forecast: that is no negative doubt)
    uncertainty = max(0.0, best_high - best.mean_intensity) + max(0.0, default.mean_intensity - default_low)
    return gain > uncertainty


def sure_enough(gains: np.ndarray, z: float = SURE_Z, min_track: int = MIN_TRACK) -> bool:
    """Whether the realised ``gains`` of a forecast's earlier moves (default minus chosen window, actual
    g/kWh; 0 where it did not move) show it earns: their mean beats ``z`` standard errors."""
    g = np.asarray(gains, dtype=float)
    g = g[np.isfinite(g)]
    if g.size < max(min_track, 2):
        return False
    return bool(g.mean() - z * g.std(ddof=1) / math.sqrt(g.size) > 0)


def default_placement(
    forecasts: dict[str, Series], job: Job, start: float, ledger: CapacityLedger, zone: str | None = None
) -> Assignment | None:
    """The run the ``sure`` rule falls back on: at ``start`` in ``zone`` (the origin), or without one
    in the zone with the lowest forecast for a run from ``start``; None when it has no room."""
    zones = [zone] if zone is not None else sorted(forecasts)
    at = np.array([start])
    options = [
        Assignment(z, start, float(np.round(forecasts[z].window_means(at, job.duration)[0], 9)))
        for z in zones
        if z in forecasts
        and forecasts[z].covers(start, start + job.duration)
        and _feasible(ledger, z, at, job.duration, job.cpu)[0]
    ]
    return min(options, key=lambda p: (p.mean_intensity, p.zone)) if options else None


def decide(
    forecasts: dict[str, Series],
    job: Job,
    now: float,
    deadline: float,
    ledger: CapacityLedger,
    rule: Rule = "point",
    bands: dict[str, Bands | None] | None = None,
    default_zone: str | None = None,
    default_start: float | None = None,
    give_up_at: float | None = None,
    weighed: list[Assignment] | None = None,
    track: np.ndarray | None = None,
    price: ScarcityPrice | None = None,
) -> Assignment:
    """One job by ``rule``: ``point`` is best_placement; ``interval`` and ``sure`` keep the default
    run (from ``default_start``, the earliest start unless given, in ``default_zone``) unless the best
    window is ``worth_moving`` to by the ``bands``, or the forecast's ``track`` record is
    ``sure_enough``."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}: one of {', '.join(RULES)}")
    best = best_placement(forecasts, job, now, deadline, ledger, give_up_at, weighed, price)
    if rule == "point":
        return best
    start = now if default_start is None else default_start
    default = default_placement(forecasts, job, start, ledger, default_zone)
    if default is None and default_zone is not None:
        # the origin is not among the eligible zones (or has no forecast): the default run is then
        # the cleanest eligible zone at the earliest start, still "run now", never the best window
        default = default_placement(forecasts, job, start, ledger)
    if default is None or (best.zone, best.start) == (default.zone, default.start):
        return best
    if rule == "interval":
        move = worth_moving(best, default, bands or {}, job.duration)
    else:
        move = best.mean_intensity < default.mean_intensity and track is not None and sure_enough(track)
    return best if move else default


def place_batch(
    forecasts: dict[str, Series],
    job: Job,
    n: int,
    now: float,
    deadline: float,
    ledger: CapacityLedger,
    give_up_at: float | None = None,
    weighed: list[Assignment] | None = None,
    rule: Rule = "point",
    bands: dict[str, Bands | None] | None = None,
    default_zone: str | None = None,
    track: np.ndarray | None = None,
    price: ScarcityPrice | None = None,
) -> list[Assignment]:
    """``n`` identical jobs, greedily: each takes the best window left by the ones before it (by
    ``rule``, see decide; with ``price``, the scarcity price of the hours each fills). ``weighed``
    receives what the first job weighed (see best_placement)."""
    out = []
    for i in range(n):
        p = decide(
            forecasts,
            job,
            now,
            deadline,
            ledger,
            rule,
            bands,
            default_zone,
            None,
            give_up_at,
            weighed if i == 0 else None,
            track,
            price,
        )
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
    rule: Rule = "point",
    bands: dict[str, Bands | None] | None = None,
    default_zone: str | None = None,
    track: np.ndarray | None = None,
    price: ScarcityPrice | None = None,
) -> tuple[list[Assignment], list[Assignment]]:
    """``place_batch``, and what its first job weighed: each zone's best window with room, best
    first (recorded with the answer, so a decision can be explained without recomputing it)."""
    weighed: list[Assignment] = []
    placements = place_batch(
        forecasts, job, n, now, deadline, ledger, give_up_at, weighed, rule, bands, default_zone, track, price
    )
    return placements, sorted(weighed, key=lambda p: (p.mean_intensity, p.start, p.zone))


def run_now_mean(series: Series, now: float, duration: float) -> float:
    """Mean intensity if the job started immediately (the baseline)."""
    return float(series.window_means(np.array([now]), duration)[0])
