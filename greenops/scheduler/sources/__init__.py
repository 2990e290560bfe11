"""Carbon-intensity sources behind one interface (see base.CarbonSource)."""

from .base import CarbonSource, SourceUnavailable, UnknownZone
from .naive import SeasonalNaiveSource
from .profiles import ProfileSource
from .traces import TraceSource

__all__ = ["CarbonSource", "ProfileSource", "SeasonalNaiveSource", "SourceUnavailable", "TraceSource", "UnknownZone"]
