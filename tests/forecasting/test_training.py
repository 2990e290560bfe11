"""Training and held-out evaluation on real traces (../shared/data)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from greenops.forecasting import report, training
from greenops.models.forecast_features import HOUR

pytestmark = pytest.mark.shared_data
HOLDOUT = datetime(2023, 3, 20, tzinfo=UTC)


@pytest.fixture(scope="module")
def trained(spring_traces):
    return training.train(spring_traces, HOLDOUT, horizon=48)


def test_no_training_window_reaches_into_the_held_out_period(spring_traces):
    w = training.zone_windows("DE", spring_traces.full("DE"), 48)
    train_w, test_w = w.split(HOLDOUT.timestamp(), 48)
    assert len(train_w.starts) and len(test_w.starts)
    assert (train_w.starts + 48 * HOUR <= HOLDOUT.timestamp()).all()
    assert (test_w.starts >= HOLDOUT.timestamp()).all()


def test_zone_models_beat_seasonal_naive_on_real_held_out_data(trained):
    assert [r.zone for r in trained.zones] == ["DE", "GB"]
    for r in trained.zones:
        assert r.scores["model"]["mape_24h"] < r.scores["seasonal_naive_24h"]["mape_24h"], r.zone
        assert r.name == f"forecaster-{r.zone.lower()}"
    assert trained.generic.name == "forecaster-generic"
    assert set(trained.generic_by_zone) == {"DE", "GB"}


def test_reports_table_json_and_plot(trained, tmp_path):
    files = report.write(trained, tmp_path, ["DE"])
    md = (tmp_path / "report.md").read_text()
    assert "| DE |" in md and "| GB |" in md and "beats seasonal-naive (24 h) on 24 h MAPE in" in md
    assert (tmp_path / "forecasts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [f.name for f in files] == ["report.json", "report.md", "forecasts.png"]


def test_default_holdout_is_midnight_days_before_the_end(spring_traces):
    # the slice ends with the hour 2023-04-14 23:00, i.e. at 2023-04-15 00:00
    assert training.default_holdout(spring_traces, 10) == datetime(2023, 4, 5, tzinfo=UTC)


def test_a_trace_too_short_for_the_holdout_is_a_named_error(spring_traces):
    with pytest.raises(ValueError, match="zone DE: .* training and 0 held-out forecasts"):
        training.train(spring_traces, datetime(2023, 4, 30, tzinfo=UTC), ["DE"])
