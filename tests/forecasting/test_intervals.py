"""Split-conformal prediction intervals: the estimator's calibration, the training that makes them,
and the pyfunc wrapper's named output tensors."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from greenops.forecasting import training
from greenops.forecasting.estimator import CarbonForecastRegressor
from greenops.forecasting.pyfunc import OipForecaster
from greenops.models.forecast_features import OUTPUT_NAMES, windows

from .test_estimator import START, synthetic


@pytest.fixture(scope="module")
def split():
    """Fit, calibration and test blocks of a synthetic series, in time order, none overlapping."""
    _, rows, targets = windows(synthetic(24 * 200, seed=3), START, horizon=48)
    a, b = 24 * 110, 24 * 150
    fit = CarbonForecastRegressor().fit(rows[: a - 48], targets[: a - 48])
    return fit, (rows[a : b - 48], targets[a : b - 48]), (rows[b:], targets[b:])


def test_calibrated_bounds_cover_about_what_they_promise(split):
    model, calibration, (rows, targets) = split
    model.calibrate(*calibration, coverage=0.8)
    forecast, lower, upper = model.predict_interval(rows)
    assert np.array_equal(forecast, model.predict(rows))
    assert (lower <= forecast).all() and (forecast <= upper).all()
    inside = (targets >= lower) & (targets <= upper)
    assert 0.7 <= inside.mean() <= 0.9, inside.mean()
    # never narrower further ahead
    widths = model.log_bounds[1] - model.log_bounds[0]
    assert (np.diff(widths) >= 0).all() and widths[-1] > widths[0]
    # a wider promise, a wider interval
    wide = CarbonForecastRegressor()
    wide._ridge, wide.horizon = model._ridge, model.horizon
    wide.calibrate(*calibration, coverage=0.95)
    assert (wide.log_bounds[1] >= model.log_bounds[1]).all() and (wide.log_bounds[0] <= model.log_bounds[0]).all()


def test_bad_calibration_is_refused(split):
    model, (rows, targets), _ = split
    with pytest.raises(ValueError, match="coverage must be between 0 and 1"):
        model.calibrate(rows, targets, coverage=1.0)
    with pytest.raises(ValueError, match="targets must be"):
        model.calibrate(rows, targets[:, :10])
    fresh = CarbonForecastRegressor().fit(rows, targets)
    with pytest.raises(ValueError, match="calibrate it first"):
        fresh.predict_interval(rows[:1])


def test_pyfunc_answers_named_tensors_forecast_first_when_calibrated(split):
    model, calibration, (rows, _) = split
    model.calibrate(*calibration)
    out = OipForecaster(model).predict(None, {"features": rows[:3]})
    assert isinstance(out, dict) and tuple(out) == OUTPUT_NAMES
    assert all(t.shape == (3, 48) for t in out.values())
    assert np.allclose(out["forecast"], model.predict(rows[:3]))


def test_training_calibrates_on_the_last_training_block_and_reports_coverage(spring_traces):
    report = training.train(spring_traces, datetime(2023, 3, 20, tzinfo=UTC), zones=["DE"])
    de = report.zones[0]
    assert de.model.log_bounds is not None and de.model.log_bounds.shape == (2, training.DEFAULT_HORIZON)
    assert de.model.coverage == training.COVERAGE
    # the held-out coverage is measured, not assumed: what it is on real data, near the promise
    assert 0.5 <= de.scores["model"]["coverage_24h"] <= 0.98
    assert report.generic.model.log_bounds is not None
    # the registered model is the one fitted on every training row: its point forecast is unchanged
    again = training.train(spring_traces, datetime(2023, 3, 20, tzinfo=UTC), zones=["DE"])
    assert again.zones[0].scores["model"]["mape_24h"] == de.scores["model"]["mape_24h"]
