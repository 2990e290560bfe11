"""The embedded default: month x hour-of-day profiles from the catalog (data/carbon/profiles.json)."""

from __future__ import annotations

import numpy as np

from greenops.catalog import Catalog, load_catalog
from greenops.intensity.series import Series

from .base import FIXED, CarbonSource, UnknownZone

HOUR = 3600.0


class ProfileSource(CarbonSource):
    """A typical-day forecast: the zone's mean for that calendar month and UTC hour."""

    name = "profiles"

    def __init__(self, catalog: Catalog | None = None):
        catalog = catalog or load_catalog()
        self._tables: dict[str, np.ndarray] = {}
        for zone in catalog.profile_zones:
            p = catalog.profile(zone)
            assert p is not None, "profile_zones lists the zones that have a profile"
            self._tables[zone] = np.array(p.monthHour, dtype=float) if p.monthHour else np.full((12, 24), p.mean)

    def zones(self) -> frozenset[str]:
        return frozenset(self._tables)

    def revision(self) -> str:
        return FIXED  # the catalog's tables, read when the source is built

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        table = self._tables.get(zone)
        if table is None:
            raise UnknownZone(f"no carbon profile for zone {zone}")
        start = np.floor(t0 / HOUR) * HOUR
        hours = start + HOUR * np.arange(max(1, int(np.ceil((t1 - start) / HOUR))))
        stamps = hours.astype("datetime64[s]")
        month = stamps.astype("datetime64[M]").astype(int) % 12
        hour = (hours // HOUR).astype(int) % 24
        return Series(float(start), HOUR, table[month, hour])
