"""Carbon-intensity sources behind one interface (see base.CarbonSource)."""

from .base import Bands, CarbonSource, SourceUnavailable, UnknownZone
from .naive import SeasonalNaiveSource
from .profiles import ProfileSource
from .traces import TraceSource

__all__ = [
    "Bands",
    "CarbonSource",
    "ProfileSource",
    "SeasonalNaiveSource",
    "SourceUnavailable",
    "TraceSource",
    "UnknownZone",
]
