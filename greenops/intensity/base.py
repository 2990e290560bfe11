"""The interface every carbon-intensity source implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from greenops.common.errors import GreenOpsError
from greenops.intensity.series import Series


class SourceUnavailable(GreenOpsError):
    """The source could not answer (network, upstream error); the API answers 503."""


class UnknownZone(GreenOpsError):
    """The source has no data for a zone; the API answers 422 naming it."""


@dataclass(frozen=True)
class Bands:
    """A prediction interval around a forecast: ``lower`` and ``upper`` on the forecast's own grid,
    holding the true value with probability ``coverage`` (on average over the source's calibration
    data; None when the source does not say, as a served model does not). Observed values have
    ``lower == upper``."""

    lower: Series
    upper: Series
    coverage: float | None
    method: str  # how the interval was made, e.g. "split-conformal, last 28 days"


# The revision of a source whose data is read once, when it is built, and never changes.
FIXED = "fixed"


class CarbonSource(ABC):
    """Intensity for a zone over a period, at the source's own resolution."""

    name: str = "source"
    # Told when this source's own upstream failed and its fallback answered in its place: the decision
    # goes on, but the forecast source is down (the scheduler counts it among the source's errors).
    on_fallback: Callable[[], None] | None = None

    @abstractmethod
    def zones(self) -> frozenset[str]:
        """Zones this source can answer for."""

    @abstractmethod
    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        """Values covering ``[t0, t1)`` as known at ``now`` (forecasts for the future).

        Raises UnknownZone or SourceUnavailable.
        """

    def revision(self) -> Hashable | None:
        """What the source's forecasts are made from, for keeping them between decisions
        (sources.cached): while it stays the same, ``series`` answers calls whose ``now`` falls in
        one hour with the same values for the same times, so the series of a period is the one of any
        longer period cut to it. A new revision means the data changed. None, the default: the
        source cannot promise that, and it is asked every time."""
        return None

    def bands(self, zone: str, t0: float, t1: float, now: float) -> Bands | None:
        """A prediction interval for ``series(zone, t0, t1, now)``, or None when the source says
        nothing about its uncertainty (a trace is what happened; a profile is no forecast of errors)."""
        return None

    def observed(self, zone: str, t0: float, t1: float) -> Series | None:
        """What actually happened over the past ``[t0, t1)``, for judging earlier forecasts; None
        when the source has no record of it."""
        return None

    def describe(self) -> str:
        return self.name

    def fell_back(self) -> None:
        """Called by a source with a fallback when that fallback answers for it."""
        if self.on_fallback is not None:
            self.on_fallback()


def extend_with(primary: Series, fallback: Series, t1: float) -> Series:
    """``primary`` continued up to ``t1`` with ``fallback``'s values, at the primary's step."""
    import numpy as np

    if primary.end >= t1:
        return primary
    times = primary.start + primary.step * np.arange(int(np.ceil((t1 - primary.start) / primary.step)))
    values = np.where(times < primary.end, primary.value_at(times), fallback.value_at(times))
    return Series(primary.start, primary.step, values)
