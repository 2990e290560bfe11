"""Forecasts served over the Open Inference Protocol v2 (KServe, MLServer).

Contract with the forecasting models (the row is defined in greenops.models.forecast_features):
  POST {url}/v2/models/forecaster-<zone>/infer   (then forecaster-generic when that model is absent)
  inputs:  "features", FP64, shape [1, 171]: the last 168 hourly intensities (oldest first, ending
           at the forecast start), then the forecast start's UTC hour (0-23), weekday (0=Monday)
           and month (1-12)
  outputs: the output named "forecast" (else the first output), shape [1, H]: H hourly intensities
           from the forecast start; a model with prediction intervals adds "lower" and "upper",
           the same shape (``bands``). A model with one output has no intervals: ``bands`` is None.
Beyond the horizon H, and when neither model answers, the fallback source fills in.

One server (MLServer with every model, as ``greenops-forecast serve`` runs it) is a plain URL.
KServe gives every InferenceService its own host; a URL with ``{model}`` in it, such as
``http://{model}-predictor.forecasting.svc``, is expanded per model, and a zone model whose host
does not answer counts as absent, so the generic model is asked next.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import numpy as np
import structlog

from greenops.intensity.series import Series
from greenops.models.forecast_features import HISTORY_HOURS, HOUR, INPUT_NAME, OUTPUT_NAMES, feature_row
from greenops.models.forecast_names import GENERIC_MODEL, model_name

from .base import Bands, CarbonSource, SourceUnavailable, UnknownZone, extend_with

log = structlog.get_logger("greenops.scheduler.oip")


class OipSource(CarbonSource):
    def __init__(
        self,
        url: str,
        history: CarbonSource | None = None,
        fallback: CarbonSource | None = None,
        timeout: float = 2.0,
        cache_ttl: float = 900.0,
        transport: httpx.BaseTransport | None = None,
    ):
        self.url = url.rstrip("/")
        self.fallback = fallback
        history = history or fallback
        if history is None:
            raise ValueError("an OIP source needs a history source (or a fallback to use as one)")
        self.history: CarbonSource = history
        self.name = f"oip({self.url})" + (f"+{fallback.name}" if fallback else "")
        self._client = httpx.Client(timeout=timeout, transport=transport)
        self._cache: dict[tuple[str, float], tuple[float, Series, Bands | None]] = {}
        self.cache_ttl = cache_ttl
        # what answered: "zone" model, "generic" model or the "fallback" source (reports, tests)
        self.answers = {"zone": 0, "generic": 0, "fallback": 0}

    def zones(self) -> frozenset[str]:
        return self.history.zones()

    def observed(self, zone: str, t0: float, t1: float) -> Series | None:
        return self.history.observed(zone, t0, t1)

    def endpoint(self, model: str) -> str:
        base = self.url.replace("{model}", model)
        return f"{base}/v2/models/{model}/infer"

    def _infer(self, model: str, row: list[float], absent_if_unreachable: bool = False) -> dict[str, np.ndarray] | None:
        """The model's named outputs ("forecast", and "lower"/"upper" when it has them); None if absent."""
        body = {"inputs": [{"name": INPUT_NAME, "shape": [1, len(row)], "datatype": "FP64", "data": row}]}
        try:
            r = self._client.post(self.endpoint(model), json=body)
        except httpx.ConnectError:
            # per-model hosts: no InferenceService for this zone is the same as a 404
            if absent_if_unreachable and "{model}" in self.url:
                return None
            raise
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            raise SourceUnavailable(f"model {model} answered HTTP {r.status_code}: {r.text[:200]}")
        outputs = r.json().get("outputs") or []
        if not outputs or not outputs[0].get("data"):
            raise SourceUnavailable(f"model {model} answered without an output tensor")
        named = {o.get("name"): o for o in outputs}
        point, lower, upper = (named.get(n) for n in OUTPUT_NAMES)
        forecast = _finite(point or outputs[0])
        if forecast is None:
            raise SourceUnavailable(f"model {model} answered an empty or non-finite 'forecast' tensor")
        out = {"forecast": forecast}
        if lower is None or upper is None:
            return out  # a model from before the intervals: one tensor
        low, high = _finite(lower), _finite(upper)
        if low is None or high is None or not (len(low) == len(high) == len(forecast)):
            # Bad bounds cost the intervals, never the forecast: the point rule does not need them.
            log.warning("oip.bounds_dropped", model=model, reason="empty, non-finite or of another length")
            return out
        return {**out, "lower": low, "upper": high}

    def forecast(self, zone: str, now: float) -> Series:
        """The model's forecast from the current hour; cached per zone and hour."""
        return self._forecast(zone, now)[0]

    def _forecast(self, zone: str, now: float) -> tuple[Series, Bands | None]:
        start = np.floor(now / HOUR) * HOUR
        hit = self._cache.get((zone, start))
        if hit and time.monotonic() - hit[0] < self.cache_ttl:
            return hit[1], hit[2]
        past = self.history.series(zone, start - HISTORY_HOURS * HOUR, start, now)
        hours = start - HOUR * np.arange(HISTORY_HOURS, 0, -1)
        row = feature_row(past.value_at(hours), start)
        try:
            values, answered = self._infer(model_name(zone), row, absent_if_unreachable=True), "zone"
            if values is None:
                values, answered = self._infer(GENERIC_MODEL, row), "generic"
        except httpx.HTTPError as exc:
            raise SourceUnavailable(f"OIP server at {self.url} unreachable: {exc}") from exc
        if values is None:
            raise SourceUnavailable(f"neither {model_name(zone)} nor {GENERIC_MODEL} is served at {self.url}")
        self.answers[answered] += 1
        series = Series(float(start), HOUR, values["forecast"])
        bands = None
        if "lower" in values:
            lower, upper = Series(float(start), HOUR, values["lower"]), Series(float(start), HOUR, values["upper"])
            bands = Bands(lower, upper, None, f"the model's own ({answered} model; coverage as it was calibrated)")
        self._cache[(zone, start)] = (time.monotonic(), series, bands)
        return series, bands

    def bands(self, zone: str, t0: float, t1: float, now: float) -> Bands | None:
        """The model's interval over ``[t0, t1)``; None when the model has none, does not answer, or
        its horizon ends first (the fallback beyond it claims no uncertainty of its own)."""
        if zone not in self.zones():
            raise UnknownZone(f"no history for zone {zone}")
        try:
            _, bands = self._forecast(zone, now)
        except SourceUnavailable:
            return None
        if bands is None or not bands.lower.covers(t0, t1):
            return None
        return Bands(bands.lower.slice(t0, t1), bands.upper.slice(t0, t1), bands.coverage, bands.method)

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        if zone not in self.zones():
            raise UnknownZone(f"no history for zone {zone}")
        try:
            predicted = self.forecast(zone, now)
        except SourceUnavailable as exc:
            if self.fallback is None:
                raise
            log.warning("oip.fallback", zone=zone, reason=str(exc))
            self.fell_back()
            self.answers["fallback"] += 1
            return self.fallback.series(zone, t0, t1, now)
        if self.fallback is not None:
            predicted = extend_with(predicted, self.fallback.series(zone, predicted.start, t1, now), t1)
        if not predicted.covers(t0, t1):
            raise SourceUnavailable(f"forecast for {zone} ends before the requested period")
        return predicted.slice(t0, t1)


def _finite(tensor: dict[str, Any]) -> np.ndarray | None:
    """A tensor's values, clipped at 0; None when empty or not all finite."""
    values = np.asarray(tensor.get("data") or [], dtype=float).reshape(-1)
    if values.size == 0 or not np.all(np.isfinite(values)):
        return None
    clipped: np.ndarray = np.clip(values, 0, None)
    return clipped
