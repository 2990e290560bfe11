"""Where ``greenops report`` reads what the grids really emitted, after the fact.

- **Recorded traces** (the default): Electricity Maps CSV exports in a folder, read by the
  scheduler's own ``TraceSource``; by default the public 2023 traces beside the checkout
  (``shared/data/greendcc_ci_2023``), the folder ``greenops-forecast`` trains on.
- **Electricity Maps' history**, when its token is configured (``ELECTRICITYMAPS_TOKEN``, as for
  the scheduler's ``--source electricitymaps``): ``GET /carbon-intensity/past-range`` through the
  scheduler's Electricity Maps client, in spans the API accepts.

A source that cannot answer for a zone and period raises ``UnknownZone`` or ``SourceUnavailable``;
the report turns that into a reason on the workload's row, never a crash.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import httpx
import pandas as pd

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.common.toolpaths import REPO
from greenops.intensity import CarbonSource, SourceUnavailable, TraceSource, UnknownZone
from greenops.intensity.electricitymaps import DEFAULT_BASE, TOKEN_VARIABLE, ElectricityMapsSource
from greenops.intensity.series import Series, from_epoch

DEFAULT_TRACES = REPO.parent / "shared" / "data" / "greendcc_ci_2023"
# Electricity Maps answers past-range queries of hourly data for at most 10 days at a time.
PAST_RANGE_SPAN = timedelta(days=10)
HOUR = 3600.0


class NoHistory(CarbonSource):
    """No history could be opened: every question is answered with why, so each row says it."""

    name = "none"

    def __init__(self, why: str):
        self.why = why

    def zones(self) -> frozenset[str]:
        return frozenset()

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        raise UnknownZone(self.why)

    def describe(self) -> str:
        return f"none ({self.why})"


class ElectricityMapsHistory(ElectricityMapsSource):
    """What Electricity Maps measured, by its past-range endpoint (the forecast client's session,
    token header and base URL)."""

    def __init__(self, token: str, base_url: str = DEFAULT_BASE, timeout: float = 10.0):
        super().__init__(token, base_url=base_url, timeout=timeout)
        self.name = "electricitymaps-history"

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        points: list[dict[str, object]] = []
        # from the hour holding t0: the API lists the data points from `start` on, and the hour that
        # began before a mid-hour start is the value over its first minutes
        start = from_epoch(t0 - t0 % HOUR)
        while start < from_epoch(t1):
            end = min(start + PAST_RANGE_SPAN, from_epoch(t1))
            points += self._past_range(zone, stamp(start), stamp(end))
            start = end
        usable = [p for p in points if p.get("carbonIntensity") is not None]
        if len(usable) < 2:
            raise UnknownZone(
                f"Electricity Maps has no history for zone {zone} between {stamp(from_epoch(t0))} "
                f"and {stamp(from_epoch(t1))}"
            )
        s = Series.from_pandas(
            pd.Series(
                [float(str(p["carbonIntensity"])) for p in usable],
                index=pd.to_datetime([str(p["datetime"]) for p in usable], utc=True),
            )
        )
        if not s.covers(t0, t1):
            raise UnknownZone(
                f"Electricity Maps' history for zone {zone} covers {stamp(from_epoch(s.start))} to "
                f"{stamp(from_epoch(s.end))}, not the whole of {stamp(from_epoch(t0))} to {stamp(from_epoch(t1))}"
            )
        return s.slice(t0, t1)

    def _past_range(self, zone: str, start: str, end: str) -> list[dict[str, object]]:
        try:
            r = self._client.get("/carbon-intensity/past-range", params={"zone": zone, "start": start, "end": end})
        except httpx.HTTPError as exc:
            raise SourceUnavailable(f"Electricity Maps unreachable: {exc}") from exc
        if r.status_code in (401, 403):
            raise SourceUnavailable(f"Electricity Maps refused the token (HTTP {r.status_code})")
        if r.status_code in (400, 404):
            raise UnknownZone(f"Electricity Maps has no history for zone {zone} from {start} to {end}: {r.text[:200]}")
        if r.status_code != 200:
            raise SourceUnavailable(f"Electricity Maps answered HTTP {r.status_code}: {r.text[:200]}")
        data = r.json().get("data")
        return list(data) if isinstance(data, list) else []


def history_source(traces: Path | None = None, token: str | None = None) -> CarbonSource:
    """Electricity Maps' history when a token is given (or configured in the environment), else
    the traces in ``traces`` (default: the public traces beside the checkout). A folder given
    explicitly must exist; the default one may be absent, and then each row says so."""
    token = token if token is not None else os.environ.get(TOKEN_VARIABLE)
    if token:
        return ElectricityMapsHistory(token)
    folder = traces or DEFAULT_TRACES
    if not folder.is_dir():
        if traces is not None:
            raise GreenOpsError(f"--traces {folder}: no such folder")
        return NoHistory(f"no traces at {folder} and no {TOKEN_VARIABLE}: pass --traces DIR")
    try:
        return TraceSource.from_directory(folder)
    except ValueError as exc:
        raise GreenOpsError(f"--traces {folder}: {exc}") from None
