"""Seasonal-naive forecasts from a trace, with no look-ahead: the future repeats the last period."""
from __future__ import annotations

import numpy as np

from greenops.scheduler.series import Series

from .base import CarbonSource, UnknownZone
from .traces import TraceSource

DAY = 86400.0


class SeasonalNaiveSource(CarbonSource):
    """Values at or after ``now`` are the trace's value one (or more) ``period`` earlier, before now.

    ``period`` 1 day is "same hour yesterday", 7 days "same hour last week".
    """

    def __init__(self, trace: TraceSource, period: float = DAY):
        self.trace = trace
        self.period = period
        self.name = f"seasonal-naive({period / 3600:g}h)"

    def zones(self) -> frozenset[str]:
        return self.trace.zones()

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        full = self.trace.full(zone)
        step = full.step
        # on the trace's own grid, so every forecast point is one observed point
        start = full.start + np.floor((t0 - full.start) / step) * step
        times = start + step * np.arange(max(1, int(np.ceil((t1 - start) / step))))
        # Shift every future point back by whole periods until it lies before `now`.
        k = np.where(times >= now, np.ceil((times - now + step) / self.period), 0)
        past = times - k * self.period
        if past.min() < full.start:
            raise UnknownZone(f"not enough history for zone {zone} to forecast from")
        return Series(float(start), step, full.value_at(past))
