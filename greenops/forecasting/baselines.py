"""The forecasts a model must beat, computed from the same input rows the model sees (no look-ahead)."""

from __future__ import annotations

import numpy as np

from greenops.models.forecast_features import HISTORY_HOURS


def seasonal_naive(rows: np.ndarray, horizon: int, period: int) -> np.ndarray:
    """Every future hour repeats the last observed value at the same phase of ``period`` hours
    (24: same hour yesterday, 168: same hour last week)."""
    if not 0 < period <= HISTORY_HOURS:
        raise ValueError(f"period must be within the {HISTORY_HOURS} h of history, got {period}")
    lead = np.arange(horizon)
    return np.asarray(rows, dtype=float)[:, HISTORY_HOURS - period + lead % period]


def persistence(rows: np.ndarray, horizon: int) -> np.ndarray:
    """The last observed value, flat."""
    return np.repeat(np.asarray(rows, dtype=float)[:, HISTORY_HOURS - 1 : HISTORY_HOURS], horizon, axis=1)


BASELINES = {
    "seasonal_naive_24h": lambda rows, horizon: seasonal_naive(rows, horizon, 24),
    "seasonal_naive_168h": lambda rows, horizon: seasonal_naive(rows, horizon, 168),
    "persistence": persistence,
}
