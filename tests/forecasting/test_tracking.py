"""MLflow logging and the registry on a local sqlite store (the server path is in test_mlops_integration)."""

from __future__ import annotations

import re
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import mlflow
import numpy as np
import pytest
from mlflow import MlflowClient

from greenops.forecasting import tracking, training

pytestmark = pytest.mark.shared_data
REPO = Path(__file__).resolve().parents[2]


def pins(lines) -> dict[str, str]:
    return dict(m.groups() for line in lines if (m := re.match(r"^\s*\"?([A-Za-z0-9_.-]+)==([^\s\";]+)", line)))


def test_serving_pins_agree_with_the_project_and_the_installed_packages():
    project = pins(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    serving = pins((REPO / "tools" / "mlserver" / "requirements.txt").read_text().splitlines())
    installed = pins(tracking.serving_requirements())
    for package in tracking.SERVING_PACKAGES:
        assert project[package] == serving[package] == installed[package], package


@pytest.fixture
def store(tmp_path):
    previous = mlflow.get_tracking_uri()
    tracking.use_tracking(f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "artifacts")
    yield tmp_path
    mlflow.set_tracking_uri(previous)


def test_logs_registers_with_alias_and_loads_back(store, spring_traces):
    report = training.train(spring_traces, datetime(2023, 3, 20, tzinfo=UTC), ["DE"], horizon=48)
    versions = tracking.log_training(report, [])
    assert versions == {"forecaster-de": "1", "forecaster-generic": "1"}
    client = MlflowClient()
    champion = client.get_model_version_by_alias("forecaster-de", tracking.ALIAS)
    run = client.get_run(champion.run_id)
    assert run.data.params["zone"] == "DE" and float(run.data.metrics["mape_24h"]) > 0
    assert run.data.metrics["mape_24h"] < run.data.metrics["seasonal_naive_24h.mape_24h"]
    loaded = mlflow.pyfunc.load_model("models:/forecaster-de@champion")
    rows = report.zones[0].test.rows[:4]
    answer = loaded.predict({"features": rows})
    forecast, lower, upper = report.zones[0].model.predict_interval(rows)
    assert np.allclose(answer["forecast"], forecast)
    assert np.allclose(answer["lower"], lower) and np.allclose(answer["upper"], upper)
    # nothing left in the working directory: artifacts go beside the store
    assert list((store / "artifacts").iterdir())
    # a second training is version 2 and takes the alias
    again = tracking.log_training(report, [])
    assert again["forecaster-de"] == "2"
    assert tracking.champions(client, ["forecaster-de"]) == {"forecaster-de": "2"}


def test_export_writes_the_kserve_layout_with_pinned_requirements(store, spring_traces, tmp_path):
    report = training.train(spring_traces, datetime(2023, 3, 20, tzinfo=UTC), ["GB"], horizon=48)
    tracking.log_training(report, [])
    exported = tracking.export(tmp_path / "models")
    assert sorted(exported) == ["forecaster-gb", "forecaster-generic"]
    model_dir = exported["forecaster-gb"]
    assert (model_dir / "MLmodel").is_file() and (model_dir / "python_model.pkl").is_file()
    requirements = (model_dir / "requirements.txt").read_text().split()
    assert set(tracking.serving_requirements()) <= set(requirements)
    with pytest.raises(LookupError, match="forecaster-xx has no version with alias 'champion'"):
        tracking.export(tmp_path / "none", ["forecaster-xx"])
