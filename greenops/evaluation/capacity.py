"""Carbon under tight capacity: greenops against the simplest rules and an offline bound.

The setting of the thesis's journal paper (a round-robin baseline, "heavy limitations on the
available resources"), rebuilt on real 2025 traces, since the paper's own scenario is not published:

- three zones, DE, FR and GB, from the 2025 Let's Wait Awhile traces (30 min, averaged to the hour:
  the scheduler books capacity in hour slots);
- a stream of VMs over ``weeks`` weeks (``workload``): arrivals on the hour, a Poisson number per hour
  that is higher on weekday office hours; 1-12 h long; 0-48 h of slack (a third must start at once);
  2, 4, 8 or 16 vCPU; an origin zone each;
- every zone offers the same vCPUs in every hour, ``level`` times a third of the peak of the demand
  when every VM starts on arrival (so at 1.0 the three zones together hold that peak);
- every policy decides one request at a time, at its arrival, with what it knows then, and is
  charged the actual intensity of the hours its VM runs. A request that cannot start before its
  deadline's latest start runs at the earliest hour with room anywhere, and counts as missed.

Policies: round-robin (the paper's baseline: the next zone in turn with room now), the cleanest zone
now (no waiting), first fit in the origin, greenops' search on its forecasts and on a perfect one,
greenops with the scarcity price (``greenops.search.scarcity``), and the offline LP bound
(``bound.py``), which knows every request and the actual trace in advance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from greenops.intensity import CarbonSource, TraceSource
from greenops.intensity.naive import SeasonalMeanSource
from greenops.intensity.series import Series
from greenops.intensity.traces import read_lwa_csv
from greenops.search.algorithm import CapacityLedger, Job, NoFeasibleWindow, decide
from greenops.search.scarcity import ScarcityPrice, Urgent, UrgentOutlook

H = 3600
ZONES = ("DE", "FR", "GB")
FILES = {zone: f"letswaitawhile2025_{name}_ci.csv" for zone, name in (("DE", "ger"), ("FR", "fr"), ("GB", "gb"))}
LEVELS = (0.5, 0.8, 1.0, 1.2, 2.0, None)  # capacity as a multiple of the run-now peak; None: unbounded
LATE_HOURS = 24 * 14  # how far past its latest start a missed request may still be run
FIRST_DAY = datetime(2025, 3, 3, tzinfo=UTC)  # a Monday, with two months of the year's trace before it


@dataclass(frozen=True)
class Request:
    """One VM as submitted: hours are counted from the scenario's first hour."""

    origin: str
    arrival: int
    duration: int
    slack: int
    cpu: int

    @property
    def latest_start(self) -> int:
        return self.arrival + self.slack

    @property
    def deadline(self) -> int:
        return self.arrival + self.slack + self.duration


def workload(weeks: int = 4, seed: int = 2025) -> list[Request]:
    """The request stream: about 4 000 VMs in four weeks (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    for hour in range(weeks * 7 * 24):
        day, clock = divmod(hour, 24)
        busy = day % 7 < 5 and 8 <= clock < 18
        for _ in range(rng.poisson(12.0 if busy else 3.5)):
            urgent = rng.random() < 1 / 3
            out.append(
                Request(
                    origin=str(rng.choice(ZONES)),
                    arrival=hour,
                    duration=int(rng.integers(1, 13)),
                    slack=0 if urgent else int(rng.integers(1, 49)),
                    cpu=int(rng.choice([2, 4, 8, 16])),
                )
            )
    return out


def warm_up(seed: int = 2025) -> list[Request]:
    """The week before the scenario, drawn the same way (hours -168 to -1): what the outlook has
    learnt when the scenario starts, as a service's record would hold it."""
    return [replace(r, arrival=r.arrival - 7 * 24) for r in workload(1, seed + 1)]


def run_now_peak(requests: list[Request]) -> int:
    """The most vCPUs running at once when every request starts on arrival."""
    load = np.zeros(max(r.deadline for r in requests) + 1)
    for r in requests:
        load[r.arrival : r.arrival + r.duration] += r.cpu
    return int(load.max())


@dataclass(frozen=True)
class Traces:
    """The actual hourly intensity of each zone, from the scenario's first hour (index 0) on, and the
    source the forecasters read (the whole year, so that they have their history)."""

    first: datetime
    hourly: dict[str, np.ndarray]
    source: TraceSource

    @classmethod
    def load(cls, data: Path, first: datetime = FIRST_DAY, hours: int = 24 * 7 * 8) -> Traces:
        series = {}
        hourly = {}
        for zone, name in FILES.items():
            s = read_lwa_csv(data / name).resample("1h").mean()
            series[zone] = Series.from_pandas(s)
            window = s[(s.index >= pd.Timestamp(first)) & (s.index < pd.Timestamp(first + timedelta(hours=hours)))]
            hourly[zone] = window.to_numpy(dtype=float)
        return cls(first, hourly, TraceSource(series))

    def epoch(self, hour: float) -> float:
        return self.first.timestamp() + hour * H

    def grams(self, zone: str, start: int, r: Request) -> float:
        """The run's emissions in vCPU-hours times g/kWh (a constant power per vCPU cancels in every ratio)."""
        return float(self.hourly[zone][start : start + r.duration].sum() * r.cpu)


@dataclass
class Ledger:
    """vCPUs used per zone and hour; ``capacity`` per zone-hour (inf: unbounded)."""

    capacity: float
    hours: int
    used: dict[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        self.used = {z: np.zeros(self.hours) for z in ZONES}

    def fits(self, zone: str, start: int, r: Request) -> bool:
        return bool((self.used[zone][start : start + r.duration] + r.cpu <= self.capacity + 1e-9).all())

    def book(self, zone: str, start: int, r: Request) -> None:
        if not self.fits(zone, start, r):  # a policy's bug, never a result: the scenario stops
            raise ValueError(f"{zone} from hour {start}: {r.cpu} vCPU more is over the capacity")
        self.used[zone][start : start + r.duration] += r.cpu

    def earliest(self, r: Request, zones: tuple[str, ...] = ZONES, after: int | None = None) -> tuple[str, int] | None:
        """The earliest start from ``after`` (the arrival) with room, in ``zones`` order at each hour."""
        for start in range(r.arrival if after is None else after, r.latest_start + LATE_HOURS + 1):
            for zone in zones:
                if self.fits(zone, start, r):
                    return zone, start
        return None


@dataclass
class Outcome:
    """What a policy did with every request."""

    policy: str
    grams: float = 0.0
    missed: int = 0
    unplaced: int = 0
    by_zone: dict[str, int] = field(default_factory=dict)
    moves: int = 0  # bookings moved before their start (re-optimisation), counted per move
    placements: list[tuple[Request, str, int]] = field(default_factory=list)  # in the order decided

    def add(self, traces: Traces, r: Request, zone: str, start: int) -> None:
        self.placements.append((r, zone, start))
        self.grams += traces.grams(zone, start, r)
        self.missed += start > r.latest_start
        self.by_zone[zone] = self.by_zone.get(zone, 0) + 1


Choose = Callable[[Request, Ledger], tuple[str, int] | None]
Booked = Callable[[Request, str, int], None]


def simulate(
    policy: str,
    choose: Choose,
    requests: list[Request],
    traces: Traces,
    capacity: float,
    booked: Booked | None = None,
) -> Outcome:
    """Decide the requests in arrival order; a choice of None (nothing before the deadline) runs late.
    ``booked`` hears of every booking, late ones included (a policy with a ledger of its own)."""
    ledger = Ledger(capacity, max(r.latest_start for r in requests) + LATE_HOURS + 13)
    out = Outcome(policy)
    for r in requests:
        choice = choose(r, ledger) or ledger.earliest(r, after=r.latest_start + 1)
        if choice is None:
            out.unplaced += 1
            continue
        ledger.book(*choice, r)
        if booked is not None:
            booked(r, *choice)
        out.add(traces, r, *choice)
    return out


def round_robin() -> Choose:
    """The paper's baseline: the zones in turn, now; the next in turn when one is full; the earliest
    hour with room when all are."""
    turn = [0]

    def choose(r: Request, ledger: Ledger) -> tuple[str, int] | None:
        order = ZONES[turn[0] % 3 :] + ZONES[: turn[0] % 3]
        turn[0] += 1
        return ledger.earliest(r, order)

    return choose


def cleanest_now(traces: Traces) -> Choose:
    """No waiting: the zone whose intensity is lowest in the hour of arrival (observed), with room."""

    def choose(r: Request, ledger: Ledger) -> tuple[str, int] | None:
        order = tuple(sorted(ZONES, key=lambda z: traces.hourly[z][r.arrival]))
        return ledger.earliest(r, order)

    return choose


def first_fit_origin() -> Choose:
    """The origin's earliest hour with room, ignoring carbon."""

    def choose(r: Request, ledger: Ledger) -> tuple[str, int] | None:
        return ledger.earliest(r, (r.origin,))

    return choose


class Forecasts:
    """Each request's forecast series, as the scheduler would fetch them at its arrival (the same for
    every capacity level, so they are made once)."""

    def __init__(self, traces: Traces, source: CarbonSource):
        self.traces = traces
        self.source = source
        self._cache: dict[tuple[int, int], dict[str, Series]] = {}

    def of(self, r: Request) -> dict[str, Series]:
        return self.at(r.arrival, r.deadline)

    def at(self, hour: int, deadline: int) -> dict[str, Series]:
        """The series from ``hour`` to ``deadline``, as issued at ``hour``."""
        key = (hour, deadline)
        if key not in self._cache:
            now = self.traces.epoch(hour)
            self._cache[key] = {z: self.source.series(z, now, self.traces.epoch(deadline), now) for z in ZONES}
        return self._cache[key]


def run_greenops(
    policy: str,
    requests: list[Request],
    traces: Traces,
    forecasts: Forecasts,
    capacity: float,
    price: ScarcityPrice | None = None,
    history: list[Request] | None = None,
) -> Outcome:
    """greenops' own search (``decide``, the service's point rule) on its capacity ledger, one request
    at a time; with ``price``, the scarcity price of the hours it would fill, and with ``history``
    (requests of the week before, hours counted back from 0) the outlook of urgent requests the price
    adds, learnt from those and from every urgent request since."""
    ledger = CapacityLedger(capacity)
    outlook = None
    if price is not None and history is not None:
        outlook = UrgentOutlook(
            [Urgent(traces.epoch(r.arrival), r.duration * H, r.cpu) for r in history if r.slack == 0],
            known_since=traces.epoch(min(r.arrival for r in history)),
        )
        price = replace(price, outlook=outlook)

    def choose(r: Request, _: Ledger) -> tuple[str, int] | None:
        now = traces.epoch(r.arrival)
        job = Job(r.cpu, 1, r.duration * H)
        try:
            a = decide(forecasts.of(r), job, now, traces.epoch(r.deadline), ledger, price=price)
        except NoFeasibleWindow:
            return None
        return a.zone, round((a.start - traces.first.timestamp()) / H)

    def booked(r: Request, zone: str, start: int) -> None:
        ledger.reserve(zone, traces.epoch(start), r.duration * H, r.cpu)
        if outlook is not None and r.slack == 0:
            outlook.add(Urgent(traces.epoch(r.arrival), r.duration * H, r.cpu))

    return simulate(policy, choose, requests, traces, capacity, booked)


@dataclass(frozen=True)
class Level:
    factor: float | None  # of the run-now peak; None: unbounded
    capacity: float  # vCPUs per zone-hour

    @property
    def label(self) -> str:
        return "unbounded" if self.factor is None else f"{self.factor:.1f} x peak"


def levels(requests: list[Request], factors: tuple[float | None, ...] = LEVELS) -> Iterator[Level]:
    peak = run_now_peak(requests)
    for f in factors:
        yield Level(f, float("inf") if f is None else f * peak / len(ZONES))


def mean_7d(traces: Traces) -> SeasonalMeanSource:
    """The service's seasonal forecaster: the mean of the last seven days at the same hour."""
    return SeasonalMeanSource(traces.source, 7)
