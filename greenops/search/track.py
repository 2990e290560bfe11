"""A forecast's record on one decision, for the ``sure`` rule (greenops.search.algorithm).

The same request is replayed as if it had come ``j`` whole days earlier, for ``TRACK_DAYS`` values
of ``j``: on the forecasts the source issued then, by the point rule, against the same default run.
Each replay is charged what then really happened (``CarbonSource.observed``): the realised gain of
its move, 0 where it did not move. Whole days keep the time of day, which is what a nightly job's
choice depends on. Only replays that had ended before ``now`` count, so nothing looks ahead.
"""

from __future__ import annotations

import math
import time

import numpy as np

from greenops.intensity.base import CarbonSource, SourceUnavailable, UnknownZone
from greenops.intensity.series import Series
from greenops.search.algorithm import (
    TRACK_DAYS,
    Assignment,
    CapacityLedger,
    DecisionTimeout,
    Job,
    NoFeasibleWindow,
    best_placement,
    default_placement,
)

DAY = 86400.0


def realised_gain(best: Assignment, default: Assignment | None, observed: dict[str, Series], duration: float) -> float:
    """What moving from ``default`` to ``best`` really saved (g/kWh); 0 when it did not move."""
    if default is None or (best.zone, best.start) == (default.zone, default.start):
        return 0.0
    if best.mean_intensity >= default.mean_intensity:
        return 0.0

    def actual(p: Assignment) -> float:
        return float(observed[p.zone].window_means(np.array([p.start]), duration)[0])

    return actual(default) - actual(best)


def track_record(
    source: CarbonSource,
    zones: list[str],
    job: Job,
    begin: float,
    deadline: float,
    now: float,
    default_zone: str | None = None,
    default_start: float | None = None,
    days: int = TRACK_DAYS,
    give_up_at: float | None = None,
) -> np.ndarray | None:
    """The realised gains of the point rule on this request replayed 1..``days`` days back (the
    first replay that had ended by ``now``); None when the source has no record of the past. A day
    the source cannot forecast is NaN. Past ``give_up_at`` (monotonic) it raises DecisionTimeout, as
    the search does: the replays count against the request's req_timeout."""
    first = max(1, math.ceil((deadline - now) / DAY))
    start = begin if default_start is None else default_start
    gains = np.full(days, np.nan)
    for i, j in enumerate(range(first, first + days)):
        if give_up_at is not None and time.monotonic() > give_up_at:
            raise DecisionTimeout(f"replaying the decision on earlier days passed req_timeout at day {i}")
        shift = j * DAY
        try:
            # what really happened first: a source with no record of the past is asked for no forecast
            observed = {z: source.observed(z, begin - shift, deadline - shift) for z in zones}
            known = {z: s for z, s in observed.items() if s is not None}
            if len(known) < len(zones):
                return None
            forecasts = {z: source.series(z, begin - shift, deadline - shift, now - shift) for z in zones}
        except (UnknownZone, SourceUnavailable):
            continue
        try:
            best = best_placement(forecasts, job, begin - shift, deadline - shift, give_up_at=give_up_at)
        except NoFeasibleWindow:
            continue
        default = default_placement(forecasts, job, start - shift, CapacityLedger(), default_zone)
        gains[i] = realised_gain(best, default, known, job.duration)
    return gains
