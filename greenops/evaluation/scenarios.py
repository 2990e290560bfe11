"""Scenarios that measure the scheduler against baselines and the oracle on real traces.

Every policy decides at the job's arrival with what it would know then, and every decision is
then charged the *actual* intensity of the trace over the run:
- baseline: run now, at the origin;
- greedy:   run now, in the zone whose intensity is lowest right now (observed, not forecast);
- ours:     the scheduler's window search on forecasts (seasonal-naive: no look-ahead);
- oracle:   the same search on the actual trace (perfect knowledge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from greenops.intensity import CarbonSource, TraceSource
from greenops.intensity.series import Series
from greenops.search.algorithm import CapacityLedger, Job, best_placement

H = 3600.0


@dataclass(frozen=True)
class Arrival:
    origin: str
    zones: tuple[str, ...]
    arrival: float  # epoch seconds: when the job is submitted (and decided)
    earliest: float  # earliest start
    deadline: float  # latest end
    duration: float  # seconds
    cpu: float = 4


@dataclass
class Outcome:
    policy: str
    intensities: list[float] = field(default_factory=list)  # actual mean intensity of each run
    weights: list[float] = field(default_factory=list)  # energy proxy: cpu x duration
    zones: dict[str, int] = field(default_factory=dict)

    def add(self, zone: str, intensity: float, weight: float) -> None:
        self.intensities.append(intensity)
        self.weights.append(weight)
        self.zones[zone] = self.zones.get(zone, 0) + 1

    @property
    def mean(self) -> float:
        return float(np.average(self.intensities, weights=self.weights))


def actual_mean(trace: Series, start: float, duration: float) -> float:
    return float(trace.window_means(np.array([start]), duration)[0])


def run(
    arrivals: list[Arrival], truth: TraceSource, forecasts: dict[str, CarbonSource], capacity_vcpu: float | None = None
) -> dict[str, Outcome]:
    """Charge every policy's decision for every arrival at the trace's actual intensity."""
    out = {name: Outcome(name) for name in ["baseline", "greedy", *forecasts, "oracle"]}
    ledgers = {name: CapacityLedger(capacity_vcpu or float("inf")) for name in [*forecasts, "oracle"]}
    for a in arrivals:
        job = Job(a.cpu, 1, a.duration)
        weight = a.cpu * a.duration / H
        origin = truth.full(a.origin)
        out["baseline"].add(a.origin, actual_mean(origin, a.earliest, a.duration), weight)
        # greedy: the lowest intensity observed at the decision time, started immediately
        now_values = {z: float(truth.full(z).value_at(np.array([a.arrival - 1]))[0]) for z in a.zones}
        greedy_zone = min(sorted(now_values), key=now_values.__getitem__)
        out["greedy"].add(greedy_zone, actual_mean(truth.full(greedy_zone), a.earliest, a.duration), weight)
        for name, source in [*forecasts.items(), ("oracle", truth)]:
            series = {z: source.series(z, a.earliest, a.deadline, a.arrival) for z in a.zones}
            p = best_placement(series, job, a.earliest, a.deadline, ledgers[name])
            ledgers[name].reserve(p.zone, p.start, a.duration, a.cpu)
            out[name].add(p.zone, actual_mean(truth.full(p.zone), p.start, a.duration), weight)
    return out


def summarise(outcomes: dict[str, Outcome]) -> dict[str, Any]:
    base = outcomes["baseline"].mean
    oracle_saving = base - outcomes["oracle"].mean
    rows = {}
    for name, o in outcomes.items():
        saving = base - o.mean
        rows[name] = {
            "mean_gco2_per_kwh": round(o.mean, 2),
            "saving_percent": round(100 * saving / base, 2),
            "oracle_capture_percent": round(100 * saving / oracle_saving, 1) if oracle_saving > 0 else None,
            "placements_per_zone": dict(sorted(o.zones.items(), key=lambda kv: -kv[1])),
            "jobs": len(o.intensities),
        }
    return rows


# --- Let's Wait Awhile: nightly jobs ---------------------------------------------------------
# Our own nightly measurement, not LWA's Scenario I, which lwa.py replicates. This one runs every
# day of 2020, where LWA has 365 jobs. It uses each trace at its own step (DE: 15 min), where LWA
# keeps the :00/:30 samples. Its oracle has perfect knowledge, where LWA's forecasts carry 5 % noise.
# So its oracle saves more than LWA's figure does. lwa_gap.py measures each of these differences,
# and greenops/evaluation/README.md gives the figures.
def nightly_arrivals(
    zone: str, year: int, window_hours: float, duration: float = 0.5 * H, nominal_hour: int = 1
) -> list[Arrival]:
    """A job every night of ``year`` at ``nominal_hour`` UTC, free to move ±window_hours; it is
    decided when its window opens."""
    arrivals = []
    day = datetime(year, 1, 1, tzinfo=UTC)
    while day.year == year:
        nominal = (day + timedelta(hours=nominal_hour)).timestamp()
        earliest = nominal - window_hours * H
        arrivals.append(Arrival(zone, (zone,), earliest, earliest, nominal + window_hours * H + duration, duration, 1))
        day += timedelta(days=1)
    return arrivals


def nightly_with_baseline_at_nominal(
    arrivals: list[Arrival], truth: TraceSource, forecasts: dict[str, CarbonSource]
) -> dict[str, Outcome]:
    """As ``run``, but the baseline is the nominal start (the window's centre), as in the paper."""
    out = run(arrivals, truth, forecasts)
    base = Outcome("baseline")
    for a in arrivals:
        nominal = (a.earliest + a.deadline - a.duration) / 2
        base.add(a.origin, actual_mean(truth.full(a.origin), nominal, a.duration), a.cpu * a.duration / H)
    out["baseline"] = base
    out.pop("greedy")
    return out


# --- geographic + temporal on the 16 zones of 2023 -----------------------------------------
def geo_arrivals(
    zones: list[str], n: int, seed: int = 2023, first_day: int = 15, since: datetime | None = None
) -> list[Arrival]:
    """``n`` jobs at random times of 2023 (after two weeks of history, or from ``since``), from random
    origins; any of ``zones`` is eligible; durations 1-12 h; slack before the deadline 0-48 h."""
    rng = np.random.default_rng(seed)
    t0 = datetime(2023, 1, 1, tzinfo=UTC).timestamp() + first_day * 24 * H
    if since is not None:
        t0 = max(t0, since.timestamp())
    t1 = datetime(2023, 12, 25, tzinfo=UTC).timestamp()
    arrivals = []
    for _ in range(n):
        arrival = float(np.floor(rng.uniform(t0, t1) / 60) * 60)
        duration = float(rng.choice([1, 2, 3, 4, 6, 8, 12])) * H
        slack = float(rng.choice([0, 2, 6, 12, 24, 48])) * H
        origin = str(rng.choice(zones))
        arrivals.append(
            Arrival(
                origin,
                tuple(zones),
                arrival,
                arrival,
                arrival + duration + slack,
                duration,
                float(rng.choice([2, 4, 8, 16])),
            )
        )
    return arrivals


def burst_arrivals(zones: list[str], n: int, seed: int = 7) -> list[Arrival]:
    """``n`` jobs submitted within two hours of 14 June 2023, each with a day of slack: without
    capacity they would all pile into the same clean zone and hours (the black hole)."""
    rng = np.random.default_rng(seed)
    t0 = datetime(2023, 6, 14, 8, tzinfo=UTC).timestamp()
    arrivals = []
    for _ in range(n):
        arrival = t0 + float(np.floor(rng.uniform(0, 2 * H) / 60) * 60)
        duration = float(rng.choice([1, 2, 4])) * H
        arrivals.append(
            Arrival(
                str(rng.choice(zones)),
                tuple(zones),
                arrival,
                arrival,
                arrival + duration + 24 * H,
                duration,
                float(rng.choice([4, 8, 16])),
            )
        )
    return sorted(arrivals, key=lambda a: a.arrival)
