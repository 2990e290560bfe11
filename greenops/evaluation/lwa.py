"""Let's Wait Awhile, Scenario I (nightly jobs), replicated with our scheduler's search.

Wiesner et al., "Let's Wait Awhile: How Temporal Workload Shifting Can Reduce Carbon Emissions in the
Cloud", Middleware '21. The simulation is public: dos-group/lets-wait-awhile. Line numbers below are
``simulate.py`` at 5e0d155 and ``strategy.py`` at 6f58b9e, the first commit, whose code made the
published figure. What it does, and how this module does the same with ``best_placement`` deciding
every start:

- **Trace.** ``data/<country>_ci.csv`` from 2020-01-01 00:00 to the file's end on 9 January 2021
  (``_load_dataset``, l.195-199). Only the samples at :00 and :30 are kept (l.73-74), and each stands
  for its whole half hour: Germany's 15-min trace is *sampled*, not averaged. The clock is the file's
  own, and it is UTC: the timestamps run on through both 2020 clock changes, and Germany's midday
  solar dip is centred near 11:25.
- **Jobs.** 365 jobs of 30 min, one a day at 01:00 from 1 January (l.81). The last one is on
  30 December. The length is asserted equal to the 30-min step (strategy l.38).
- **Window.** ``window`` in ``range(17)`` half-hour steps (l.69, l.84, l.64): ±0 to ±8 h. A job is
  decided when its window opens (l.48-53), from the forecast at the ``2 * window + 1`` half-hour starts
  around 01:00 (strategy l.39-40). The first, i.e. earliest, minimum wins (``np.argmin``, l.42). Here
  that is one zone, with the earliest start at ``01:00 - window`` and the deadline at
  ``01:00 + window + 30 min``.
- **Quirk, kept.** For windows wider than ±1 h, the 1 January job's window opens before the trace.
  LWA skips that job (l.50-51) but still divides by 365 (l.66). So here an undecidable job counts as
  zero over 365. This adds 0.2 to 0.3 points to the savings (``lwa_gap``).
- **Forecast.** The actual trace plus independent Gaussian noise with σ = error × the mean of the
  loaded trace. One value is drawn per half hour from ``numpy.random.default_rng(seed)``
  (``_apply_error``, l.202-206). Error 0 is a single run; error 5 % uses seeds 0 to 9 (l.16, l.85-92,
  l.210-213).
- **Outcome.** The *actual* intensity of the half hours in which a job ran, summed and divided by 365
  (l.66). For 5 %, this is the mean of the ten seeds' results (l.89).
- **Saving.** ``1 - result[window] / result[0]`` per country and error level (``evaluation.ipynb``,
  cells 4-5). It is measured against ±0 h, i.e. always at 01:00, at the same error level. The ±0 h run
  has a single candidate start, so it does not depend on the seed. The ratio of the means is
  therefore also the mean of the ratios.

The 5 % curves of the published figure (``img/nightly_result.pdf``, ``PUBLISHED_FIGURE``) are reproduced
to within 1e-6 points at every window. The ±8 h figures that the issue quotes from the paper's text
(``QUOTED``) are not reproduced: see greenops/evaluation/README.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from greenops.intensity.series import Series
from greenops.intensity.traces import read_lwa_csv
from greenops.search.algorithm import Job, best_placement

STEP = 1800.0  # LWA's MEASUREMENT_INTERVAL: 30 min, the job length and the window step
DAY = 86400.0
JOBS = 365
WINDOW_STEPS = tuple(range(17))  # ±0 h to ±8 h in half hours
SEEDS = tuple(range(10))
ERRORS = (0.0, 0.05)
FILES = {"DE": "letswaitawhile_ger_ci.csv", "GB": "letswaitawhile_gb_ci.csv", "FR": "letswaitawhile_fr_ci.csv"}
TRACE_START = datetime(2020, 1, 1, tzinfo=UTC)

# The 5 % error curves of LWA's published figure img/nightly_result.pdf (commit 5e0d155), read from
# the figure's vector paths and calibrated on its tick marks: saving in % (lower panel) and mean
# intensity in gCO2/kWh (upper panel), for window steps 0..16. The paths' coordinates have six
# decimals of a point (1 pt = 0.245 saving points, 1.83 g), so the reading error is below 1e-6 points
# and 1e-5 g; the rounding here (6 and 4 decimals) adds at most 5e-7 points and 5e-5 g.
PUBLISHED_FIGURE: dict[str, dict[str, tuple[float, ...]]] = {
    "DE": {
        "saving_percent": (0.0, 0.156082, 0.53904, 1.142092, 1.401581, 1.624071, 1.743634, 1.92465, 2.195589,
                           2.599863, 3.274361, 4.166827, 5.460181, 6.771092, 8.45359, 9.976686, 11.742793),
        "mean_gco2_per_kwh": (305.328, 304.8515, 303.6822, 301.8409, 301.0486, 300.3693, 300.0042, 299.4515,
                              298.6243, 297.3899, 295.3305, 292.6055, 288.6566, 284.654, 279.5168, 274.8664, 269.474),
    },
    "GB": {
        "saving_percent": (0.0, 1.867768, 3.035868, 4.12414, 4.771169, 5.310385, 5.760207, 6.105904, 6.304481,
                           6.398449, 6.51856, 6.621743, 6.743971, 6.846457, 7.033024, 7.304098, 7.945111),
        "mean_gco2_per_kwh": (184.0959, 180.6574, 178.507, 176.5036, 175.3124, 174.3197, 173.4916, 172.8552,
                              172.4896, 172.3166, 172.0955, 171.9056, 171.6806, 171.4919, 171.1484, 170.6494,
                              169.4693),
    },
    "FR": {
        "saving_percent": (0.0, 0.627242, 1.472228, 2.466076, 2.996869, 3.387, 3.638531, 3.875864, 4.083138,
                           4.27404, 4.547907, 4.755509, 5.000143, 5.14288, 5.309966, 5.447731, 5.577449),
        "mean_gco2_per_kwh": (52.1211, 51.7941, 51.3537, 50.8357, 50.5591, 50.3557, 50.2246, 50.1009, 49.9929,
                              49.8934, 49.7506, 49.6424, 49.5149, 49.4405, 49.3535, 49.2816, 49.214),
    },
}  # fmt: skip
# ±8 h savings the issue quotes as the paper's (5 % error). LWA's code on LWA's data gives the figure's
# 11.74 / 7.95 / 5.58 instead, and no single error level gives all three (greenops/evaluation/README.md).
QUOTED = {"DE": 11.2, "GB": 7.4, "FR": 4.1}


def cut(raw: pd.Series, from_2020: bool = True, sampled: bool = True) -> pd.Series:
    """What LWA keeps of a trace: the part from 2020-01-01 00:00, and the samples at :00 and :30."""
    index = pd.DatetimeIndex(raw.index)
    keep = np.ones(len(raw), dtype=bool)
    if from_2020:
        keep &= index >= pd.Timestamp(TRACE_START)
    if sampled:
        keep &= index.minute % 30 == 0
    return raw[keep]


def load_trace(path: Path) -> Series:
    """The trace as LWA loads it (``cut``), as a regular 30-min series."""
    raw = cut(read_lwa_csv(path))
    gaps = pd.DatetimeIndex(raw.index).to_series().diff().dt.total_seconds().to_numpy()[1:]
    if len(raw) < 2 or not np.all(gaps == STEP):
        # LWA indexes the trace by position, so a gap would shift its clock; none of the three has one
        raise ValueError(f"{path.name}: the :00/:30 samples from 2020-01-01 are not a regular 30-min series")
    return Series(raw.index[0].timestamp(), STEP, raw.to_numpy(dtype=float))


def with_noise(trace: Series, error: float, seed: int) -> Series:
    """LWA's forecast: the trace plus N(0, error × mean) noise, one draw per step."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, error * float(trace.values.mean()), size=len(trace.values))
    return Series(trace.start, trace.step, trace.values + noise)


def decide(forecast: Series, nominals: np.ndarray, before: float, after: float, duration: float) -> np.ndarray:
    """The start our search picks for each nominal start, free within ``[nominal - before, nominal + after]``;
    NaN where the forecast does not cover the window (the job cannot be decided)."""
    job = Job(cpu=1, memory=1, duration=duration)
    starts = np.full(len(nominals), np.nan)
    for i, nominal in enumerate(nominals):
        earliest, deadline = float(nominal) - before, float(nominal) + after + duration
        if forecast.covers(earliest, deadline):
            starts[i] = best_placement({"zone": forecast.slice(earliest, deadline)}, job, earliest, deadline).start
    return starts


def mean_intensity(
    truth: Series, forecasts: Sequence[Series], nominals: np.ndarray, before: float, after: float, duration: float
) -> float:
    """Actual intensity per job, as LWA counts it: each forecast's placements charged at the truth, the
    sum over the decided jobs divided by all of them; then the mean over the forecasts (seeds)."""
    per_forecast = []
    for forecast in forecasts:
        starts = decide(forecast, nominals, before, after, duration)
        decided = starts[~np.isnan(starts)]
        per_forecast.append(float(truth.window_means(decided, duration).sum()) / len(nominals))
    return float(np.mean(per_forecast))


def nightly_nominals(trace: Series, jobs: int = JOBS, hour: float = 1.0) -> np.ndarray:
    """LWA's job set: one job a day at ``hour`` of the trace's clock, from its first day."""
    return trace.start + hour * 3600 + DAY * np.arange(jobs)


@dataclass(frozen=True)
class Curve:
    """Mean intensity (gCO2/kWh) for each window step, at one error level."""

    country: str
    error: float
    window_steps: tuple[int, ...]
    mean_gco2_per_kwh: tuple[float, ...]

    @property
    def saving_percent(self) -> tuple[float, ...]:
        """Saving relative to the ±0 h run (step 0 must be the first window)."""
        m = np.array(self.mean_gco2_per_kwh)
        return tuple(float(v) for v in 100 * (1 - m / m[0]))


def scenario_one(
    trace: Series,
    country: str,
    error: float,
    window_steps: Sequence[int] = WINDOW_STEPS,
    seeds: Sequence[int] = SEEDS,
) -> Curve:
    """One country's curve at one error level; ``window_steps`` must start with 0 (the baseline)."""
    if not window_steps or window_steps[0] != 0:
        raise ValueError("the window steps must start with 0: savings are relative to the ±0 h run")
    # error 0 is one run on the trace itself, as in LWA (its noise would be N(0, 0))
    forecasts = [trace] if error == 0 else [with_noise(trace, error, s) for s in seeds]
    nominals = nightly_nominals(trace)
    means = tuple(
        # ±0 h has a single candidate start, so every forecast places it alike: one run is enough
        mean_intensity(trace, forecasts if w else forecasts[:1], nominals, w * STEP, w * STEP, STEP)
        for w in window_steps
    )
    return Curve(country, error, tuple(window_steps), means)


def reproduce(
    data: Path,
    window_steps: Sequence[int] = WINDOW_STEPS,
    errors: Sequence[float] = ERRORS,
    seeds: Sequence[int] = SEEDS,
) -> dict[str, dict[float, Curve]]:
    """Scenario I for DE, GB and FR (LWA's California trace is not in the shared data), every error level."""
    out: dict[str, dict[float, Curve]] = {}
    for country, name in FILES.items():
        trace = load_trace(data / name)
        out[country] = {e: scenario_one(trace, country, e, window_steps, seeds) for e in errors}
    return out
