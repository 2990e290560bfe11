"""Why the nightly scenario's oracle saves more than LWA's published figure: one factor at a time.

The nightly scenario (``scenarios.nightly_arrivals``) and LWA's Scenario I (``lwa``) both move a 30-min
job around 01:00 of the traces' clock, which is UTC, within the same two-sided window, and both
measure the saving against the job run at 01:00. They differ in four ways. ``Setup()`` is the
nightly scenario's oracle, and each field below switches one of the four to LWA's choice. Setting all
four gives LWA exactly (``LWA``). The last three fields are choices on which the two already agree;
they are measured only to show how much each one matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from greenops.evaluation.lwa import DAY, SEEDS, STEP, cut, mean_intensity, with_noise
from greenops.intensity.series import Series

LOCAL_TIME = {"DE": "Europe/Berlin", "GB": "Europe/London", "FR": "Europe/Paris"}


@dataclass(frozen=True)
class Setup:
    """How one nightly run is set up; the defaults are the nightly scenario's oracle."""

    # the four differences
    error: float = 0.0  # forecast = actual + N(0, error x mean), one per seed; 0 is the oracle
    sampled: bool = False  # LWA's :00/:30 samples instead of the trace at its own step (DE: 15 min)
    days: int = 366  # jobs from 1 January: every day of 2020, or LWA's 365 (none on 31 December)
    from_2020: bool = False  # trace cut at 2020-01-01 00:00 as LWA loads it; undecidable jobs count as 0
    # agreed on; for scale only
    local_clock: bool = False  # 01:00 local time instead of 01:00 UTC
    forward_only: bool = False  # window [01:00, 01:00 + w] instead of [01:00 - w, 01:00 + w]
    baseline_at_opening: bool = False  # baseline run when the window opens, not at 01:00


LWA = Setup(error=0.05, sampled=True, days=365, from_2020=True)

# the four differences, in the order the cumulative column adds them: the noise last, so that the
# chain ends on LWA's own noise draws (drawn on the native trace they are other numbers)
DIFFERENCES: tuple[tuple[str, dict[str, Any]], ...] = (
    (":00/:30 samples (DE: of a 15-min trace)", {"sampled": True}),
    ("365 jobs (none on 31 December)", {"days": 365}),
    ("trace cut at 1 Jan: that job counts 0", {"from_2020": True}),
    ("forecast = actual + 5 % noise (seeds)", {"error": 0.05}),
)
AGREED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("01:00 local time, not UTC", {"local_clock": True}),
    ("forward-only window [01:00, 01:00 + w]", {"forward_only": True}),
    ("baseline when the window opens", {"baseline_at_opening": True}),
)


def trace_for(raw: pd.Series, setup: Setup) -> Series:
    # the construction TraceSource.from_lwa uses, so Setup() sees what the nightly scenario sees
    return Series.from_pandas(cut(raw, setup.from_2020, setup.sampled))


def nominals_for(country: str, setup: Setup) -> np.ndarray:
    if not setup.local_clock:
        return datetime(2020, 1, 1, 1, tzinfo=UTC).timestamp() + DAY * np.arange(setup.days)
    days = pd.date_range("2020-01-01 01:00", periods=setup.days, freq="D")
    # 01:00 does not exist in London on 29 March (taken as 02:00 BST) and occurs twice on 25 October (the first)
    local = days.tz_localize(
        LOCAL_TIME[country], nonexistent="shift_forward", ambiguous=np.ones(setup.days, dtype=bool)
    )
    return np.array([t.timestamp() for t in local])


def saving(raw: pd.Series, country: str, setup: Setup, window_steps: int, seeds: Sequence[int] = SEEDS) -> float:
    """Saving in % of the setup's job set at ``window_steps`` half hours, against its baseline."""
    trace = trace_for(raw, setup)
    nominals = nominals_for(country, setup)
    before, after = (0.0 if setup.forward_only else window_steps * STEP), window_steps * STEP
    forecasts = [trace] if setup.error == 0 else [with_noise(trace, setup.error, s) for s in seeds]
    shifted = mean_intensity(trace, forecasts, nominals, before, after, STEP)
    at = nominals - before if setup.baseline_at_opening else nominals
    baseline = mean_intensity(trace, [trace], at, 0.0, 0.0, STEP)
    return 100 * (1 - shifted / baseline)


def factor_table(raws: dict[str, pd.Series], window_steps: int, seeds: Sequence[int] = SEEDS) -> dict[str, Any]:
    """The nightly oracle, each factor's effect alone (from the nightly oracle, in points) and the
    cumulative saving as the differences are added one after another (ending on LWA)."""

    def row(setup: Setup) -> dict[str, float]:
        return {country: saving(raw, country, setup, window_steps, seeds) for country, raw in raws.items()}

    start = row(Setup())
    rows = []
    cumulative = Setup()
    for label, change in (*DIFFERENCES, *AGREED):
        alone = row(replace(Setup(), **change))
        entry: dict[str, Any] = {"factor": label, "alone": {c: round(alone[c] - start[c], 2) + 0.0 for c in start}}
        if (label, change) in DIFFERENCES:
            cumulative = replace(cumulative, **change)
            entry["cumulative"] = {c: round(v, 2) for c, v in row(cumulative).items()}
        rows.append(entry)
    # DIFFERENCES add up to LWA (a test checks it), so the last cumulative row is LWA's Scenario I
    return {"nightly_oracle": {c: round(v, 2) for c, v in start.items()}, "factors": rows}
