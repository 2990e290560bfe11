"""The forecasting models without a server: trained here on the 2023 traces, answered in-process.

``make eval`` has no MLServer running, yet the capture table should show the models. Training them
is a few seconds (greenops.forecasting.training, the same code and hold-out as ``greenops-forecast
train``), and ``InProcessModels`` is the scheduler's OIP source with the HTTP call replaced by the
pyfunc wrapper MLServer would run: the same history, feature row, zone-then-generic choice and
named output tensors, so its figures are those of the served models trained the same way.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from greenops.forecasting.pyfunc import OipForecaster
from greenops.forecasting.training import train
from greenops.intensity import CarbonSource, TraceSource
from greenops.intensity.oip import OipSource
from greenops.models.forecast_features import INPUT_NAME
from greenops.models.forecast_names import model_name


class InProcessModels(OipSource):
    def __init__(self, models: dict[str, OipForecaster], history: CarbonSource):
        super().__init__("in-process", history=history)
        self.models = models
        self.name = "models (in-process)"

    def _infer(self, model: str, row: list[float], absent_if_unreachable: bool = False) -> dict[str, np.ndarray] | None:
        wrapper = self.models.get(model)
        if wrapper is None:
            return None  # as MLServer's 404 for a model it does not serve
        out = wrapper.predict(None, {INPUT_NAME: np.array([row])})
        tensors = out if isinstance(out, dict) else {"forecast": out}
        return {name: np.asarray(t, dtype=float).reshape(-1) for name, t in tensors.items()}


def trained_models(traces: TraceSource, holdout_from: datetime) -> dict[str, OipForecaster]:
    """Every zone's model and the generic one, trained before ``holdout_from``, by model name."""
    report = train(traces, holdout_from)
    return {model_name(r.zone): OipForecaster(r.model) for r in [*report.zones, report.generic]}
