"""Carbon-intensity series (series.Series) and the sources that give them, behind one interface
(base.CarbonSource): traces, seasonal-naive and model forecasts, Electricity Maps, profiles."""

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
