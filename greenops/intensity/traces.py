"""Recorded traces: a folder of CSV files, as Electricity Maps exports them or as Let's Wait Awhile publishes them.

Electricity Maps format: ``Datetime (UTC)``, ``Zone Id`` and ``Carbon Intensity gCO₂eq/kWh (LCA)``
(``(direct)`` when LCA is absent), one file per zone and period; files of one zone are joined.
Let's Wait Awhile format: ``Time``, ``Carbon Intensity``; the zone is given when loading.
A trace source answers with what actually happened: it is the oracle's perfect knowledge.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from greenops.intensity.series import Series

from .base import FIXED, CarbonSource, UnknownZone

EM_TIME = "Datetime (UTC)"
EM_ZONE = "Zone Id"
EM_VALUES = ("Carbon Intensity gCO₂eq/kWh (LCA)", "Carbon Intensity gCO₂eq/kWh (direct)")


def read_electricitymaps_csv(path: Path) -> tuple[str, pd.Series]:
    df = pd.read_csv(path)
    missing = [c for c in (EM_TIME, EM_ZONE) if c not in df.columns]
    column = next((c for c in EM_VALUES if c in df.columns), None)
    if missing or column is None:
        raise ValueError(f"{path.name}: not an Electricity Maps export (missing {missing or list(EM_VALUES)})")
    zone = str(df[EM_ZONE].iloc[0])
    index = pd.to_datetime(df[EM_TIME], utc=True)
    return zone, pd.Series(df[column].astype(float).to_numpy(), index=index)


def read_lwa_csv(path: Path) -> pd.Series:
    df = pd.read_csv(path)
    return pd.Series(df["Carbon Intensity"].astype(float).to_numpy(), index=pd.to_datetime(df["Time"], utc=True))


class TraceSource(CarbonSource):
    name = "traces"

    def __init__(self, series: dict[str, Series]):
        if not series:
            raise ValueError("a trace source needs at least one zone")
        self._series = dict(series)

    @classmethod
    def from_directory(cls, folder: Path) -> TraceSource:
        """Every ``*.csv`` in Electricity Maps format below ``folder``, joined per zone."""
        parts: dict[str, list[pd.Series]] = {}
        for path in sorted(Path(folder).rglob("*.csv")):
            zone, s = read_electricitymaps_csv(path)
            parts.setdefault(zone, []).append(s)
        if not parts:
            raise ValueError(f"no Electricity Maps CSV files in {folder}")
        return cls({z: Series.from_pandas(pd.concat(p).sort_index()) for z, p in parts.items()})

    @classmethod
    def from_lwa(cls, files: dict[str, Path]) -> TraceSource:
        return cls({zone: Series.from_pandas(read_lwa_csv(path)) for zone, path in files.items()})

    def zones(self) -> frozenset[str]:
        return frozenset(self._series)

    def revision(self) -> str:
        return FIXED  # the traces, read when the source is built; what happened does not depend on now

    def full(self, zone: str) -> Series:
        try:
            return self._series[zone]
        except KeyError:
            raise UnknownZone(f"no trace for zone {zone}") from None

    def observed(self, zone: str, t0: float, t1: float) -> Series | None:
        return self.series(zone, t0, t1, t1)

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        s = self.full(zone)
        if not s.covers(t0, t1):
            raise UnknownZone(f"the trace for zone {zone} does not cover the requested period")
        return s.slice(t0, t1)
