"""The interface every carbon-intensity source implements."""
from __future__ import annotations

from abc import ABC, abstractmethod

from greenops.errors import GreenOpsError
from greenops.scheduler.series import Series


class SourceUnavailable(GreenOpsError):
    """The source could not answer (network, upstream error); the API answers 503."""


class UnknownZone(GreenOpsError):
    """The source has no data for a zone; the API answers 422 naming it."""


class CarbonSource(ABC):
    """Intensity for a zone over a period, at the source's own resolution."""

    name: str = "source"

    @abstractmethod
    def zones(self) -> frozenset[str]:
        """Zones this source can answer for."""

    @abstractmethod
    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        """Values covering ``[t0, t1)`` as known at ``now`` (forecasts for the future).

        Raises UnknownZone or SourceUnavailable.
        """

    def describe(self) -> str:
        return self.name
