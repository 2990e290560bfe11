"""The Electricity Maps API (v3) as a live source, authenticated by token.

GET {base}/carbon-intensity/forecast?zone=Z with header ``auth-token``:
  {"zone": "DE", "forecast": [{"carbonIntensity": 302, "datetime": "2025-01-01T13:00:00.000Z"}, ...],
   "updatedAt": "..."}
Beyond the forecast horizon the fallback source fills in; with no fallback, an error is a 503.
"""

from __future__ import annotations

import time

import httpx
import numpy as np
import pandas as pd
import structlog

from greenops.intensity.series import Series

from .base import CarbonSource, SourceUnavailable, UnknownZone, extend_with

DEFAULT_BASE = "https://api.electricitymap.org/v3"
TOKEN_VARIABLE = "ELECTRICITYMAPS_TOKEN"  # where the scheduler and `greenops report --history` read the token
log = structlog.get_logger("greenops.scheduler.electricitymaps")


class ElectricityMapsSource(CarbonSource):
    def __init__(
        self,
        token: str,
        fallback: CarbonSource | None = None,
        base_url: str = DEFAULT_BASE,
        timeout: float = 3.0,
        cache_ttl: float = 900.0,
        zones: frozenset[str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        self.fallback = fallback
        self._zones = zones
        self.name = "electricitymaps" + (f"+{fallback.name}" if fallback else "")
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), timeout=timeout, transport=transport, headers={"auth-token": token}
        )
        self._cache: dict[str, tuple[float, Series]] = {}
        self.cache_ttl = cache_ttl

    def zones(self) -> frozenset[str]:
        if self._zones is not None:
            return self._zones
        return self.fallback.zones() if self.fallback else frozenset()

    def forecast(self, zone: str) -> Series:
        hit = self._cache.get(zone)
        if hit and time.monotonic() - hit[0] < self.cache_ttl:
            return hit[1]
        try:
            r = self._client.get("/carbon-intensity/forecast", params={"zone": zone})
        except httpx.HTTPError as exc:
            raise SourceUnavailable(f"Electricity Maps unreachable: {exc}") from exc
        if r.status_code in (401, 403):
            raise SourceUnavailable(f"Electricity Maps refused the token (HTTP {r.status_code})")
        if r.status_code == 404:
            raise UnknownZone(f"Electricity Maps has no forecast for zone {zone}")
        if r.status_code != 200:
            raise SourceUnavailable(f"Electricity Maps answered HTTP {r.status_code}: {r.text[:200]}")
        points = [p for p in r.json().get("forecast") or [] if p.get("carbonIntensity") is not None]
        if len(points) < 2:
            raise SourceUnavailable(f"Electricity Maps returned no usable forecast for zone {zone}")
        s = pd.Series(
            [float(p["carbonIntensity"]) for p in points],
            index=pd.to_datetime([p["datetime"] for p in points], utc=True),
        )
        series = Series.from_pandas(s)
        self._cache[zone] = (time.monotonic(), series)
        return series

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        try:
            predicted = self.forecast(zone)
        except SourceUnavailable as exc:
            if self.fallback is None:
                raise
            log.warning("electricitymaps.fallback", zone=zone, reason=str(exc))
            self.fell_back()
            return self.fallback.series(zone, t0, t1, now)
        if predicted.start > t0:
            # the forecast starts at the next full hour: the current partial hour takes its first value
            predicted = Series(
                predicted.start - predicted.step * np.ceil((predicted.start - t0) / predicted.step),
                predicted.step,
                np.concatenate(
                    (
                        np.full(int(np.ceil((predicted.start - t0) / predicted.step)), predicted.values[0]),
                        predicted.values,
                    )
                ),
            )
        if self.fallback is not None:
            predicted = extend_with(predicted, self.fallback.series(zone, predicted.start, t1, now), t1)
        if not predicted.covers(t0, t1):
            raise SourceUnavailable(f"the Electricity Maps forecast for {zone} ends before the deadline")
        return predicted.slice(t0, t1)
