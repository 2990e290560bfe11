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


class SeasonalMeanSource(CarbonSource):
    """The mean of the last ``days`` observed values at the same time of day: a steadier
    seasonal forecast than repeating a single day, still with no look-ahead."""

    def __init__(self, trace: TraceSource, days: int = 7):
        self.trace = trace
        self.days = days
        self.name = f"seasonal-mean({days}d)"
        self._naive = SeasonalNaiveSource(trace, DAY)

    def zones(self) -> frozenset[str]:
        return self.trace.zones()

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        first = self._naive.series(zone, t0, t1, now)
        full = self.trace.full(zone)
        times = first.boundaries[:-1]
        k = np.where(times >= now, np.ceil((times - now + full.step) / DAY), 1)
        stack = [full.value_at(times - (k + j) * DAY) for j in range(self.days)]
        if (times - (k + self.days - 1) * DAY).min() < full.start:
            raise UnknownZone(f"not enough history for zone {zone} to forecast from")
        observed = times < now
        values = np.where(observed, full.value_at(times), np.mean(stack, axis=0))
        return Series(first.start, first.step, values)
