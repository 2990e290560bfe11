"""A carbon source whose series are kept between decisions, per revision of its data and hour of the
clock.

Every decision asks the source for each eligible zone's series over the search window; the bundled
profiles and the recorded traces would build the same values again for every request. This keeps the
last series of each zone and cuts each request's period out of it. It asks the source again when the
source's ``revision`` changes (its data changed), when a call's ``now`` is in a later hour (forecasts
are issued hourly; a simulated clock moved on), or when a period reaches past the one kept (the
longer period is then kept). A call about an earlier hour (the ``sure`` rule's replays of past days,
a clock set back) is passed on and changes nothing kept. A source without a revision is always asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from greenops.intensity.series import Series

from .base import Bands, CarbonSource

HOUR = 3600.0
KEPT_CUTS = 64  # per zone: a few deadlines per hour of requests


@dataclass(frozen=True)
class _Kept:
    revision: Hashable
    hour: int  # of the clock when the source was asked (hours since the epoch)
    series: Series
    # The cuts already made, by their data points: requests of one hour over the same period get
    # the same Series, whose window arithmetic (boundaries, running integral, breakpoints) is then
    # worked out once, not in every decision.
    cuts: dict[tuple[int, int], Series] = field(default_factory=dict)

    def cut(self, t0: float, t1: float) -> Series:
        bounds = self.series.bounds(t0, t1)
        found = self.cuts.get(bounds)
        if found is None:
            if len(self.cuts) >= KEPT_CUTS:
                self.cuts.clear()
            found = self.cuts[bounds] = self.series.cut(*bounds)
        return found


class CachedSource(CarbonSource):
    def __init__(self, inner: CarbonSource):
        self.inner = inner
        self.name = inner.name
        # zone -> its last series; a whole entry is replaced at once, so threads need no lock (two
        # that miss together both ask the source, and either answer is right)
        self._kept: dict[str, _Kept] = {}

    # A source with a fallback reports through on_fallback (MeasuredSource sets it): it is the inner
    # source's, which calls it.
    @property
    def on_fallback(self) -> Callable[[], None] | None:
        return self.inner.on_fallback

    @on_fallback.setter
    def on_fallback(self, callback: Callable[[], None] | None) -> None:
        self.inner.on_fallback = callback

    def zones(self) -> frozenset[str]:
        return self.inner.zones()

    def revision(self) -> Hashable | None:
        return self.inner.revision()

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        revision = self.inner.revision()
        if revision is None:
            return self.inner.series(zone, t0, t1, now)
        hour = math.floor(now / HOUR)
        kept = self._kept.get(zone)
        a, b = t0, t1
        if kept is not None and kept.revision == revision:
            if hour < kept.hour:
                return self.inner.series(zone, t0, t1, now)
            if hour == kept.hour:
                if kept.series.start <= t0 and t1 <= kept.series.end:
                    return kept.cut(t0, t1)
                a, b = min(t0, kept.series.start), max(t1, kept.series.end)
        fetched = self.inner.series(zone, a, b, now)
        fetched.values.flags.writeable = False  # shared by every decision that cuts it
        kept = self._kept[zone] = _Kept(revision, hour, fetched)
        return fetched if (a, b) == (t0, t1) else kept.cut(t0, t1)

    def bands(self, zone: str, t0: float, t1: float, now: float) -> Bands | None:
        return self.inner.bands(zone, t0, t1, now)

    def observed(self, zone: str, t0: float, t1: float) -> Series | None:
        return self.inner.observed(zone, t0, t1)

    def describe(self) -> str:
        return self.inner.describe()
