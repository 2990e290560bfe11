"""The forecaster: a direct multi-horizon ridge regression on log-ratios.

Each of the next H hours is predicted as log(value / level), where level is the mean of the last
24 hours, from the 168 log-ratios of the history and one-hot hour of day and weekday. Working in
ratios to the recent level makes one set of weights fit zones of any magnitude (the generic model
is the same estimator trained on every zone), and logs make errors relative, as MAPE is.

It is deliberately small: training is a single least-squares solve (well under a second per zone on
two cores), the artifact is a few hundred kilobytes, and it beats seasonal-naive on the held-out
period in every zone of the 2023 traces (see the forecasting README for the table).

Prediction intervals are split-conformal (``calibrate``): the misses of a model that did not see a
calibration block, as log(actual / forecast) per horizon hour, give that hour's lower and upper
quantile. Logs make the interval relative, like the model, so the generic model's intervals fit a
zone of 50 g as well as one of 500 g. The interval may only widen with the horizon (a running max of
the upper and min of the lower quantile), which the per-hour quantiles of a finite sample need not do.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import Ridge

from greenops.models.forecast_conformal import conformal_offsets
from greenops.models.forecast_features import FEATURES, HISTORY_HOURS

LEVEL_HOURS = 24
FLOOR = 1.0  # gCO2eq/kWh: keeps the log finite for (near-)zero readings


def _design(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.asarray(rows, dtype=float)
    if rows.ndim != 2 or rows.shape[1] != FEATURES:
        raise ValueError(f"expected rows of {FEATURES} features, got shape {list(rows.shape)}")
    history = rows[:, :HISTORY_HOURS].copy()
    gaps = ~np.isfinite(history)
    if gaps.all(axis=1).any():
        raise ValueError("a row has no finite history value")
    if gaps.any():
        # a reporting gap is filled with the row's own mean rather than failing the forecast
        history[gaps] = np.broadcast_to(np.nanmean(history, axis=1, keepdims=True), history.shape)[gaps]
    history = np.maximum(history, FLOOR)
    level = history[:, -LEVEL_HOURS:].mean(axis=1, keepdims=True)
    hour = rows[:, HISTORY_HOURS].astype(int) % 24
    weekday = rows[:, HISTORY_HOURS + 1].astype(int) % 7
    design = np.hstack([np.log(history / level), np.eye(24)[hour], np.eye(7)[weekday]])
    return design, level


class CarbonForecastRegressor:
    """fit(rows, targets) / predict(rows) -> [n, horizon] intensities."""

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha
        self.horizon: int | None = None
        self._ridge: Ridge | None = None
        # [2, horizon]: the lower and upper quantile of log(actual / forecast), per horizon hour
        self.log_bounds: np.ndarray | None = None
        self.coverage: float | None = None

    def fit(self, rows: np.ndarray, targets: np.ndarray) -> CarbonForecastRegressor:
        design, level = _design(rows)
        targets = np.asarray(targets, dtype=float)
        if targets.ndim != 2 or targets.shape[0] != design.shape[0]:
            raise ValueError(f"targets must be [n, horizon] for {design.shape[0]} rows, got {list(targets.shape)}")
        self.horizon = targets.shape[1]
        self._ridge = Ridge(alpha=self.alpha).fit(design, np.log(np.maximum(targets, FLOOR) / level))
        return self

    def predict(self, rows: np.ndarray) -> np.ndarray:
        if self._ridge is None:
            raise ValueError("the forecaster has not been fitted")
        design, level = _design(rows)
        predicted: np.ndarray = np.exp(self._ridge.predict(design).reshape(len(design), -1)) * level
        return predicted

    def calibrate(self, rows: np.ndarray, targets: np.ndarray, coverage: float = 0.8) -> CarbonForecastRegressor:
        """Conformal bounds from the misses on ``rows``/``targets``, which the fit must not have seen."""
        predicted = self.predict(rows)
        targets = np.asarray(targets, dtype=float)
        if targets.shape != predicted.shape:
            raise ValueError(f"targets must be {list(predicted.shape)}, got {list(targets.shape)}")
        misses = np.log(np.maximum(targets, FLOOR) / np.maximum(predicted, FLOOR))
        lower, upper = conformal_offsets(misses, coverage, axis=0)  # per horizon hour
        self.log_bounds = np.vstack([np.minimum.accumulate(lower), np.maximum.accumulate(upper)])
        self.coverage = coverage
        return self

    def predict_interval(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The forecast with its lower and upper bound, each [n, horizon]."""
        if self.log_bounds is None:
            raise ValueError("the forecaster has no intervals: calibrate it first")
        predicted = self.predict(rows)
        return predicted, predicted * np.exp(self.log_bounds[0]), predicted * np.exp(self.log_bounds[1])

    @property
    def n_parameters(self) -> int:
        return 0 if self._ridge is None else int(self._ridge.coef_.size + np.size(self._ridge.intercept_))
