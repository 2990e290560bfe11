"""Geographic + temporal shifting for jobs that carry our workloads' real constraints.

The unconstrained geographic scenario (``scenarios.geo_arrivals``) lets every job run in any of the
16 traced zones, so Ontario and Central Brazil win nearly everything. Here each job is a
``Workload`` as a platform team would declare it, and only the zones the placement policy allows
are offered to the scheduler's search:

- **Origin**: a catalog region in Europe or North America (``MARKETS``) whose zone has a 2023
  trace, so that "run now at the origin" can be charged.
- **Profile** (``PROFILES``, drawn with the shares given there): EU residency, a latency bound
  from the origin in Europe or in North America, or no latency bound.
- **Providers**: ``SINGLE_PROVIDER_SHARE`` of the jobs may only use the origin's own cloud, the
  rest any of the three.
- **Time**: arrival, duration, slack and vCPUs drawn as in ``geo_arrivals``; memory 2, 4 or 8 GB
  per vCPU.

The allowed regions come from ``eligible.eligible_candidates`` (the policy's chain on the
catalog; a test checks it against the real bundle in OPA). Of their zones, only those with a 2023
trace can be charged, so the search runs over the allowed *and* traced zones; how many allowed
zones that drops is reported per profile.

Every job is then placed six ways, each by ``best_placement`` and each charged the trace's actual
intensity over the run (energy proxy: vCPU x hours, as in ``scenarios.run``):

- ``baseline``: at the origin, now;
- ``space``: the best allowed zone, now (perfect knowledge of the run's intensity);
- ``time``: the origin's zone, the best start before the deadline (perfect knowledge);
- ``both``: the best allowed zone and start (perfect knowledge): the upper bound;
- ``forecast``: as ``both``, on the 7-day seasonal-mean forecast made at arrival (no look-ahead);
- ``free``: as ``both`` over all 16 traced zones, ignoring every constraint: what the
  unconstrained scenario would choose for the same jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from greenops.catalog import Catalog, Region
from greenops.common.errors import GreenOpsError
from greenops.evaluation.eligible import Candidate, eligible_candidates, eligible_zones
from greenops.evaluation.scenarios import Arrival, actual_mean
from greenops.intensity import CarbonSource, TraceSource
from greenops.models.workload import NO_LATENCY_CONSTRAINT_MS, Workload
from greenops.policies.settings import PolicySettings
from greenops.search.algorithm import Job, best_placement

H = 3600.0
SEED = 2024

# Where our workloads come from: countries, per market. Only origins whose zone has a 2023 trace
# are drawn (the baseline runs there); in the shared traces that is Germany and Great Britain in
# Europe, and Ontario, PJM, ERCOT and CAISO in North America.
MARKETS: dict[str, tuple[str, ...]] = {
    "europe": ("AT", "BE", "CH", "DE", "ES", "FI", "FR", "GB", "IE", "IT", "NL", "NO", "PL", "SE"),
    "north-america": ("CA", "US"),
}
# Half the teams run on one cloud only (their origin's), half may use all three.
SINGLE_PROVIDER_SHARE = 0.5


@dataclass(frozen=True)
class Profile:
    """A kind of job: where it comes from, whether its data must stay in the EU, and the latency
    bounds (ms from the origin) it is drawn with."""

    name: str
    share: float
    markets: tuple[str, ...]
    eu_residency: bool
    latency_bounds_ms: tuple[int, ...]


# 20 ms keeps a job in its metro or a neighbouring country (Frankfurt-Paris 12, London-Frankfurt
# 17, Virginia-Toronto 20-21 ms); 50 ms spans most of the continent, not the ocean.
PROFILES: tuple[Profile, ...] = (
    Profile("eu-residency", 0.30, ("europe",), True, (20, 50)),
    Profile("europe-latency", 0.20, ("europe",), False, (20, 50)),
    Profile("north-america-latency", 0.35, ("north-america",), False, (20, 50)),
    Profile("no-latency-bound", 0.15, ("europe", "north-america"), False, (NO_LATENCY_CONSTRAINT_MS,)),
)

POLICIES = ("baseline", "space", "time", "both", "forecast", "free")


@dataclass(frozen=True)
class ConstrainedJob:
    """One job: the workload as declared, its profile, the regions policy allows, and the arrival the
    scheduler sees (``arrival.zones``: the allowed zones that have a trace)."""

    workload: Workload
    profile: str
    candidates: tuple[Candidate, ...]
    arrival: Arrival

    @property
    def allowed_zones(self) -> tuple[str, ...]:
        return eligible_zones(list(self.candidates))

    @property
    def provider_list(self) -> str:
        return "single" if len(self.workload.eligible_providers) == 1 else "multi"

    @property
    def latency_bound(self) -> str:
        ms = self.workload.max_latency
        return "none" if ms >= NO_LATENCY_CONSTRAINT_MS else f"{ms} ms"


def origins(catalog: Catalog, traced: frozenset[str], profile: Profile) -> list[Region]:
    """The placeable catalog regions of the profile's markets whose zone has a trace (EU regions
    only for EU residency: the origin of EU data is in the EU)."""
    countries = {c for m in profile.markets for c in MARKETS[m]}
    out = [
        r
        for r in catalog.regions()
        if r.country in countries
        and r.zone in traced
        and not catalog.placement_gaps(r.provider, r.name)
        and (r.eu or not profile.eu_residency)
    ]
    if not out:
        raise GreenOpsError(f"profile {profile.name}: no origin region in {profile.markets} has a trace")
    return sorted(out, key=lambda r: (r.provider, r.name))


def constrained_jobs(
    truth: TraceSource,
    n: int,
    catalog: Catalog,
    settings: PolicySettings,
    seed: int = SEED,
    first_day: int = 15,
) -> list[ConstrainedJob]:
    """``n`` jobs over 2023 (after ``first_day`` days of history for the forecast), reproducible
    from ``seed``. A draw whose own origin region cannot take it (no fitting size there) is drawn
    again: nobody would submit it."""
    if n < 1:
        raise GreenOpsError("the constrained scenario needs at least one job")
    rng = np.random.default_rng(seed)
    traced = truth.zones()
    pools = {p.name: origins(catalog, traced, p) for p in PROFILES}
    shares = np.array([p.share for p in PROFILES])
    t0 = datetime(2023, 1, 1, tzinfo=UTC).timestamp() + first_day * 24 * H
    t1 = datetime(2023, 12, 25, tzinfo=UTC).timestamp()
    jobs: list[ConstrainedJob] = []
    while len(jobs) < n:
        profile = PROFILES[int(rng.choice(len(PROFILES), p=shares / shares.sum()))]
        pool = pools[profile.name]
        origin = pool[int(rng.integers(len(pool)))]
        single = bool(rng.random() < SINGLE_PROVIDER_SHARE)
        bound = int(rng.choice(profile.latency_bounds_ms))
        arrival = float(np.floor(rng.uniform(t0, t1) / 60) * 60)
        duration = float(rng.choice([1, 2, 3, 4, 6, 8, 12])) * H
        slack = float(rng.choice([0, 2, 6, 12, 24, 48])) * H
        cpu = int(rng.choice([2, 4, 8, 16]))
        memory = cpu * int(rng.choice([2, 4, 8]))
        workload = Workload.model_validate(
            {
                "name": f"job-{len(jobs)}",
                "cpu": cpu,
                "memory": memory,
                "duration": duration / H,
                "deadline": datetime.fromtimestamp(arrival + duration + slack, UTC),
                "maxLatency": bound,
                "originRegion": origin.name,
                "eligibleProviders": [origin.provider] if single else list(catalog.providers),
                "dataResidency": "eu" if profile.eu_residency else "none",
            },
            context={"catalog": catalog, "check_deadline": False},
        )
        candidates = eligible_candidates(workload, catalog, settings)
        if not any(c.region == origin.name for c in candidates):
            continue
        zones = tuple(z for z in eligible_zones(candidates) if z in traced)
        jobs.append(
            ConstrainedJob(
                workload,
                profile.name,
                tuple(candidates),
                Arrival(str(origin.zone), zones, arrival, arrival, arrival + duration + slack, duration, cpu),
            )
        )
    return jobs


def _place(
    source: CarbonSource, truth: TraceSource, zones: tuple[str, ...], a: Arrival, deadline: float
) -> tuple[str, float]:
    """The scheduler's choice among ``zones`` in ``[arrival, deadline]`` on ``source``, charged at
    the truth: (zone, actual mean intensity of the run)."""
    series = {z: source.series(z, a.earliest, deadline, a.arrival) for z in zones}
    p = best_placement(series, Job(a.cpu, 1, a.duration), a.earliest, deadline)
    return p.zone, actual_mean(truth.full(p.zone), p.start, a.duration)


def evaluate(jobs: list[ConstrainedJob], truth: TraceSource, forecast: CarbonSource) -> pd.DataFrame:
    """One row per job: its classes, its weight, and per policy (``POLICIES``) the zone and the
    actual mean intensity of the run (``<policy>_zone``, ``<policy>_gco2``)."""
    every_zone = tuple(sorted(truth.zones()))
    rows = []
    for j in jobs:
        a = j.arrival
        now_end = a.earliest + a.duration
        placed = {
            "baseline": (a.origin, actual_mean(truth.full(a.origin), a.earliest, a.duration)),
            "space": _place(truth, truth, a.zones, a, now_end),
            "time": _place(truth, truth, (a.origin,), a, a.deadline),
            "both": _place(truth, truth, a.zones, a, a.deadline),
            "forecast": _place(forecast, truth, a.zones, a, a.deadline),
            "free": _place(truth, truth, every_zone, a, a.deadline),
        }
        row: dict[str, Any] = {
            "job": j.workload.name,
            "profile": j.profile,
            "providers": j.provider_list,
            "latency": j.latency_bound,
            "origin_region": j.workload.origin_region,
            "allowed_zones": len(j.allowed_zones),
            "traced_zones": len(a.zones),
            "weight": a.cpu * a.duration / H,
        }
        for policy, (zone, gco2) in placed.items():
            row[f"{policy}_zone"], row[f"{policy}_gco2"] = zone, gco2
        rows.append(row)
    return pd.DataFrame(rows)


def _weighted_means(frame: pd.DataFrame) -> pd.Series:
    columns = [f"{p}_gco2" for p in POLICIES]
    return frame[columns].mul(frame["weight"], axis=0).sum() / frame["weight"].sum()


def summarise_group(frame: pd.DataFrame, top: int = 5) -> dict[str, Any]:
    """Energy-weighted mean intensity per policy, each policy's saving against the baseline (in % and
    in gCO2eq/kWh), and where ``both`` (constrained) and ``free`` (unconstrained) put the jobs."""
    means = _weighted_means(frame)
    base = float(means["baseline_gco2"])
    return {
        "jobs": len(frame),
        "baseline_gco2_per_kwh": round(base, 1),
        "mean_gco2_per_kwh": {p: round(float(means[f"{p}_gco2"]), 1) for p in POLICIES},
        "saving_percent": {p: round(100 * (1 - float(means[f"{p}_gco2"]) / base), 1) for p in POLICIES[1:]},
        # absolute reductions, the unit Sukprasert et al. report in
        "reduction_gco2_per_kwh": {p: round(base - float(means[f"{p}_gco2"]), 1) for p in POLICIES[1:]},
        "allowed_zones_mean": round(float(frame["allowed_zones"].mean()), 1),
        "traced_zones_mean": round(float(frame["traced_zones"].mean()), 1),
        "placements_per_zone": {
            p: {str(z): int(n) for z, n in frame[f"{p}_zone"].value_counts().head(top).items()}
            for p in ("both", "free")
        },
    }


def summarise(frame: pd.DataFrame, by: tuple[str, ...] = ("profile", "providers", "latency")) -> dict[str, Any]:
    """``summarise_group`` for all jobs and for each class of each column in ``by``."""
    out: dict[str, Any] = {"all": summarise_group(frame)}
    for column in by:
        out[column] = {str(k): summarise_group(g) for k, g in frame.groupby(column, sort=True)}
    return out
