"""The forecaster itself, and the pyfunc wrapper MLServer serves."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from greenops.forecasting.baselines import seasonal_naive
from greenops.forecasting.estimator import CarbonForecastRegressor
from greenops.forecasting.metrics import mape
from greenops.forecasting.pyfunc import OipForecaster
from greenops.models.forecast_features import HISTORY_HOURS, windows

START = datetime(2023, 1, 2, tzinfo=UTC).timestamp()


def synthetic(hours: int, seed: int = 0) -> np.ndarray:
    """A daily solar dip on a level that wanders and reverts (weather regimes): what seasonal-naive
    gets wrong, as it repeats yesterday's level."""
    rng = np.random.default_rng(seed)
    t = np.arange(hours)
    drift = np.zeros(hours)
    for i in range(1, hours):
        drift[i] = 0.98 * drift[i - 1] + rng.normal(0, 8)
    return (300 + drift) * (1 - 0.3 * np.clip(np.sin(2 * np.pi * (t % 24 - 6) / 24), 0, None))


@pytest.fixture(scope="module")
def fitted():
    values = synthetic(24 * 120)
    _, rows, targets = windows(values, START, horizon=48)
    cut = len(rows) - 24 * 20
    model = CarbonForecastRegressor().fit(rows[: cut - 48], targets[: cut - 48])
    return model, rows[cut:], targets[cut:]


def test_beats_seasonal_naive_on_held_out_hours(fitted):
    model, rows, targets = fitted
    ours, naive = mape(model.predict(rows), targets, 24), mape(seasonal_naive(rows, 48, 24), targets, 24)
    assert ours < naive, (ours, naive)


def test_predictions_scale_with_the_level(fitted):
    # log-ratios to the recent level: the same shape at twice the level is the same forecast, doubled
    model, rows, _ = fitted
    doubled = rows[:5].copy()
    doubled[:, :HISTORY_HOURS] *= 2
    assert np.allclose(model.predict(doubled), 2 * model.predict(rows[:5]))


def test_gaps_in_history_are_filled_and_empty_history_refused(fitted):
    model, rows, _ = fitted
    gappy = rows[:1].copy()
    gappy[0, 50:53] = np.nan
    assert np.isfinite(model.predict(gappy)).all()
    empty = rows[:1].copy()
    empty[0, :HISTORY_HOURS] = np.nan
    with pytest.raises(ValueError, match="no finite history"):
        model.predict(empty)
    with pytest.raises(ValueError, match="171 features, got shape \\[1, 170\\]"):
        model.predict(rows[:1, :170])
    with pytest.raises(ValueError, match="not been fitted"):
        CarbonForecastRegressor().predict(rows[:1])


def test_pyfunc_answers_one_plain_tensor_for_every_input_shape(fitted):
    model, rows, _ = fitted
    wrapper = OipForecaster(model)
    expected = model.predict(rows[:3])
    for given in ({"features": rows[:3]}, rows[:3], pd.DataFrame(rows[:3]), {"features": rows[:3].reshape(-1)}):
        out = wrapper.predict(None, given)
        assert isinstance(out, np.ndarray) and out.shape == (3, 48)
        assert np.allclose(out, expected)
    with pytest.raises(ValueError, match="named 'features'"):
        wrapper.predict(None, {"x": rows[:1]})
