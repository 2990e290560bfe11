"""Training and held-out evaluation, free of any tracking concern (MLflow logging is in tracking.py).

Every zone's hourly trace is cut at ``holdout_from``: a model learns from forecasts whose whole
target window ends before it, and is scored on every forecast starting at or after it, beside the
baselines computed from the same rows. The generic model learns from every zone's training rows.

Prediction intervals are split-conformal: a twin of each model is fitted on the training forecasts
that end before the last ``CALIBRATION_SHARE`` of the training period begins, and its misses on that
last block calibrate the bounds (``CarbonForecastRegressor.calibrate``). The registered model is then
fitted on every training row, as before, and carries the twin's bounds: fitted on more data, it
misses no more than its twin, so its intervals are if anything a little wide. The held-out report
gives their real coverage (``coverage_24h``: the share of held-out hours within the bounds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from greenops.intensity import TraceSource
from greenops.intensity.series import Series
from greenops.models.forecast_features import HOUR, windows
from greenops.models.forecast_names import GENERIC_ZONE as GENERIC
from greenops.models.forecast_names import model_name

from .baselines import BASELINES
from .estimator import CarbonForecastRegressor
from .metrics import scores

DEFAULT_HORIZON = 72
MAX_GAP_HOURS = 6
CALIBRATION_SHARE = 0.2  # the last fifth of the training forecasts calibrates the intervals
COVERAGE = 0.8  # central 80 % prediction intervals


@dataclass
class ZoneWindows:
    zone: str
    starts: np.ndarray
    rows: np.ndarray
    targets: np.ndarray

    def split(self, holdout_from: float, horizon: int) -> tuple[ZoneWindows, ZoneWindows]:
        train = self.starts + horizon * HOUR <= holdout_from
        test = self.starts >= holdout_from
        return (
            ZoneWindows(self.zone, self.starts[train], self.rows[train], self.targets[train]),
            ZoneWindows(self.zone, self.starts[test], self.rows[test], self.targets[test]),
        )


def zone_windows(zone: str, series: Series, horizon: int) -> ZoneWindows:
    """Every forecast of ``series``; gaps up to MAX_GAP_HOURS are interpolated, windows touching a
    longer gap are dropped rather than learnt from."""
    if abs(series.step - HOUR) > 1e-6:
        raise ValueError(f"zone {zone}: the trace must be hourly, its step is {series.step:g} s")
    values = pd.Series(series.values).interpolate(limit=MAX_GAP_HOURS, limit_area="inside").to_numpy()
    starts, rows, targets = windows(values, series.start, horizon)
    complete = np.isfinite(rows).all(axis=1) & np.isfinite(targets).all(axis=1)
    return ZoneWindows(zone, starts[complete], rows[complete], targets[complete])


@dataclass
class ZoneResult:
    zone: str
    model: CarbonForecastRegressor
    n_train: int
    n_test: int
    fit_seconds: float
    scores: dict[str, dict[str, float]]  # forecaster -> metric -> value
    test: ZoneWindows = field(repr=False)

    @property
    def name(self) -> str:
        return model_name(self.zone)


@dataclass
class TrainingReport:
    holdout_from: datetime
    horizon: int
    alpha: float
    zones: list[ZoneResult]
    generic: ZoneResult  # scores: the generic model on every zone's held-out rows, pooled
    generic_by_zone: dict[str, dict[str, float]]

    def table(self) -> list[dict[str, Any]]:
        """One row per zone: MAPE/MAE of the zone model, the generic model and the baselines."""
        out = []
        for r in self.zones:
            row = {"zone": r.zone, "n_train": r.n_train, "n_test": r.n_test}
            for forecaster, metrics in r.scores.items():
                row.update({f"{forecaster}.{k}": v for k, v in metrics.items()})
            row.update({f"generic.{k}": v for k, v in self.generic_by_zone.get(r.zone, {}).items()})
            out.append(row)
        return out


def default_holdout(traces: TraceSource, days: int) -> datetime:
    """Midnight UTC ``days`` before the end of the latest trace."""
    end = max(traces.full(z).end for z in traces.zones())
    last = datetime.fromtimestamp(end, tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return last - timedelta(days=days)


def coverage(model: CarbonForecastRegressor, rows: np.ndarray, targets: np.ndarray, hours: int = 24) -> float:
    """The share of the first ``hours`` of actual values that fall within the model's bounds."""
    _, lower, upper = model.predict_interval(rows)
    inside = (targets[:, :hours] >= lower[:, :hours]) & (targets[:, :hours] <= upper[:, :hours])
    return round(float(inside.mean()), 4)


def calibrated(train: ZoneWindows, horizon: int, alpha: float) -> CarbonForecastRegressor:
    """The model fitted on every training row, with bounds from a twin that did not see the last block."""
    model = CarbonForecastRegressor(alpha=alpha).fit(train.rows, train.targets)
    cut = float(np.quantile(train.starts, 1 - CALIBRATION_SHARE))
    fit = train.starts + horizon * HOUR <= cut
    block = train.starts >= cut
    if fit.sum() == 0 or block.sum() == 0:
        raise ValueError(f"zone {train.zone}: too few training forecasts to calibrate intervals")
    twin = CarbonForecastRegressor(alpha=alpha).fit(train.rows[fit], train.targets[fit])
    twin.calibrate(train.rows[block], train.targets[block], COVERAGE)
    model.log_bounds, model.coverage = twin.log_bounds, twin.coverage
    return model


def _evaluate(model: CarbonForecastRegressor, test: ZoneWindows, horizon: int) -> dict[str, dict[str, float]]:
    out = {"model": scores(model.predict(test.rows), test.targets)}
    out["model"]["coverage_24h"] = coverage(model, test.rows, test.targets)
    for name, baseline in BASELINES.items():
        out[name] = scores(baseline(test.rows, horizon), test.targets)
    return out


def _fit(zone: str, train: ZoneWindows, test: ZoneWindows, horizon: int, alpha: float) -> ZoneResult:
    if len(train.rows) == 0 or len(test.rows) == 0:
        raise ValueError(
            f"zone {zone}: {len(train.rows)} training and {len(test.rows)} held-out forecasts; "
            "the trace must cover a week of history plus the horizon on both sides of the holdout"
        )
    started = time.perf_counter()
    model = calibrated(train, horizon, alpha)
    seconds = time.perf_counter() - started
    return ZoneResult(
        zone, model, len(train.rows), len(test.rows), round(seconds, 3), _evaluate(model, test, horizon), test
    )


def _strided(w: ZoneWindows, stride: int) -> ZoneWindows:
    return ZoneWindows(w.zone, w.starts[::stride].copy(), w.rows[::stride].copy(), w.targets[::stride].copy())


def _pool(parts: list[ZoneWindows]) -> ZoneWindows:
    columns = zip(*[(w.starts, w.rows, w.targets) for w in parts], strict=True)
    return ZoneWindows(GENERIC, *(np.concatenate(column) for column in columns))


def train(
    traces: TraceSource,
    holdout_from: datetime,
    zones: list[str] | None = None,
    horizon: int = DEFAULT_HORIZON,
    alpha: float = 1.0,
    generic_stride: int = 3,
) -> TrainingReport:
    zones = sorted(zones or traces.zones())
    cut = holdout_from.timestamp()
    results, pooled_train, tests = [], [], {}
    # One zone at a time, keeping only its held-out rows and a strided share of its training rows
    # for the generic model: peak memory is one zone's windows, not all of them.
    for zone in zones:
        train_w, test_w = zone_windows(zone, traces.full(zone), horizon).split(cut, horizon)
        results.append(_fit(zone, train_w, test_w, horizon, alpha))
        pooled_train.append(_strided(train_w, generic_stride))
        tests[zone] = test_w
    # The generic model is what answers for a zone without its own model, so it learns from all of them.
    generic = _fit(GENERIC, _pool(pooled_train), _pool(list(tests.values())), horizon, alpha)
    by_zone = {z: scores(generic.model.predict(w.rows), w.targets) for z, w in tests.items()}
    return TrainingReport(holdout_from, horizon, alpha, results, generic, by_zone)
