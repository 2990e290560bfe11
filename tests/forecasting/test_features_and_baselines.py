"""The model input row and the baselines: one definition shared by training, serving and the scheduler."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from greenops.forecasting.baselines import persistence, seasonal_naive
from greenops.forecasting.metrics import mae, mape, scores
from greenops.models.forecast_features import FEATURES, HISTORY_HOURS, HOUR, calendar_columns, feature_row, windows

START = datetime(2023, 3, 1, tzinfo=UTC).timestamp()


def test_vectorised_calendar_matches_datetime():
    rng = np.random.default_rng(1)
    starts = np.floor(rng.uniform(0, 2e9, 500) / HOUR) * HOUR
    expected = [feature_row(np.zeros(HISTORY_HOURS), s)[-3:] for s in starts]
    assert calendar_columns(starts).tolist() == expected


def test_windows_are_rows_of_the_oip_contract():
    values = np.arange(400, dtype=float)
    starts, rows, targets = windows(values, START, horizon=24)
    assert rows.shape == (400 - HISTORY_HOURS - 24 + 1, FEATURES) and targets.shape == (len(rows), 24)
    i = 10  # the forecast starting at hour 168 + 10
    assert starts[i] == START + (HISTORY_HOURS + i) * HOUR
    assert rows[i].tolist() == feature_row(values[i : i + HISTORY_HOURS], starts[i])
    assert targets[i].tolist() == values[HISTORY_HOURS + i : HISTORY_HOURS + i + 24].tolist()


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match="168 hours of history, got 10"):
        feature_row(np.zeros(10), START)
    with pytest.raises(ValueError, match="too short"):
        windows(np.zeros(100), START, horizon=72)


def test_seasonal_naive_and_persistence_use_only_the_past():
    values = np.arange(300, dtype=float)
    _, rows, targets = windows(values, START, horizon=48)
    day = seasonal_naive(rows, 48, 24)
    # same hour yesterday for the first day, the day before for the second: always observed values
    assert (day[:, :24] == targets[:, :24] - 24).all() and (day[:, 24:] == targets[:, 24:] - 48).all()
    assert (seasonal_naive(rows, 48, 168) == targets - 168).all()
    assert (persistence(rows, 48) == rows[:, HISTORY_HOURS - 1 : HISTORY_HOURS]).all()
    with pytest.raises(ValueError, match="within the 168 h"):
        seasonal_naive(rows, 48, 336)


def test_metrics_over_the_first_hours_and_mape_ignores_zero_actuals():
    actual = np.array([[100.0, 200.0, 0.0, 50.0]])
    predicted = np.array([[110.0, 180.0, 5.0, 50.0]])
    assert mae(predicted, actual, 2) == pytest.approx(15.0)
    assert mape(predicted, actual, 2) == pytest.approx(10.0)
    assert mape(predicted, actual, 4) == pytest.approx((10 + 10 + 0) / 3)  # the 0 g/kWh hour is left out
    assert set(scores(predicted, actual, (2, 4))) == {"mae_2h", "mape_2h", "mae_4h", "mape_4h"}
