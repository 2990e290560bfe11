"""The forecasting path with real parts on loopback: an ``mlflow server`` (sqlite backend, local
artifact store behind the server's proxy), training and registration through the CLI, MLServer with
its MLflow runtime serving the registered champions over OIP v2, and the real scheduler service
deciding on the served forecast."""

from __future__ import annotations

import json
import math
import signal
from datetime import UTC, datetime

import httpx
import mlflow
import numpy as np
import pytest
from mlflow import MlflowClient

from greenops.common.clock import stamp
from greenops.common.toolpaths import REPO
from greenops.forecasting import tracking
from greenops.intensity import ProfileSource, TraceSource
from greenops.intensity.oip import OipSource
from greenops.intensity.series import to_epoch
from greenops.local.controlplane import free_port
from greenops.local.mlops import MlflowServer, MlserverServer, write_repository
from greenops.local.scheduler import SchedulerServer
from greenops.models.forecast_features import HISTORY_HOURS, HOUR, feature_row
from greenops.search.algorithm import CapacityLedger, Job, place_batch
from tests.support.common import require_mlserver
from tests.support.forecasters import train_germany
from tests.support.processes import CommandLines

pytestmark = [pytest.mark.integration, pytest.mark.mlops, pytest.mark.shared_data]
NOW = datetime(2023, 4, 10, 6, 0, tzinfo=UTC)
DEADLINE = datetime(2023, 4, 12, 6, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def mlops(spring_slice, tmp_path_factory):
    require_mlserver()
    root = tmp_path_factory.mktemp("mlops")
    previous = mlflow.get_tracking_uri()
    try:
        with MlflowServer(root=root / "mlflow") as registry:
            code = train_germany(registry.url, spring_slice, root / "report")
            assert code == 0
            tracking.use_tracking(registry.url)
            exported = tracking.export(root / "models")
            with MlserverServer(repository=write_repository(exported, root / "repository")) as server:
                yield registry, server, exported
    finally:
        mlflow.set_tracking_uri(previous)


def test_registry_holds_champions_runs_and_reports(mlops):
    registry, _, exported = mlops
    client = MlflowClient(tracking_uri=registry.url)
    assert sorted(exported) == ["forecaster-de", "forecaster-generic"]
    de = client.get_model_version_by_alias("forecaster-de", tracking.ALIAS)
    run = client.get_run(de.run_id)
    assert run.data.params["holdout_from"].startswith("2023-03-20")
    assert run.data.metrics["mape_24h"] < run.data.metrics["seasonal_naive_24h.mape_24h"]
    parent = client.get_run(run.data.tags["mlflow.parentRunId"])
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"report.md", "report.json", "forecasts.png"}
    # artifacts went through the server's proxy into its own store, none beside the client
    assert any((registry.root / "artifacts").rglob("MLmodel"))


def test_mlserver_serves_the_registered_model_over_oip_v2(mlops, spring_traces):
    _, server, exported = mlops
    assert httpx.get(f"{server.url}/v2/health/ready").status_code == 200
    meta = httpx.get(f"{server.url}/v2/models/forecaster-de").json()
    assert meta["inputs"][0]["name"] == "features" and meta["inputs"][0]["shape"] == [-1, 171]
    de = spring_traces.full("DE")
    start = to_epoch(NOW)
    row = feature_row(de.value_at(start - HOUR * np.arange(HISTORY_HOURS, 0, -1)), start)
    body = {"inputs": [{"name": "features", "shape": [1, 171], "datatype": "FP64", "data": row}]}
    out = httpx.post(f"{server.url}/v2/models/forecaster-de/infer", json=body, timeout=10).json()["outputs"][0]
    assert out["shape"] == [1, 72] and out["datatype"] == "FP64"
    local = mlflow.pyfunc.load_model(str(exported["forecaster-de"]))
    assert np.allclose(out["data"], local.predict({"features": np.array([row])})["forecast"][0])
    missing = httpx.post(f"{server.url}/v2/models/forecaster-xx/infer", json=body, timeout=10)
    assert missing.status_code == 404


def test_the_served_model_answers_its_interval_and_the_source_reads_it(mlops, spring_slice, spring_traces):
    _, server, exported = mlops
    de = spring_traces.full("DE")
    start = to_epoch(NOW)
    row = feature_row(de.value_at(start - HOUR * np.arange(HISTORY_HOURS, 0, -1)), start)
    body = {"inputs": [{"name": "features", "shape": [1, 171], "datatype": "FP64", "data": row}]}
    outputs = httpx.post(f"{server.url}/v2/models/forecaster-de/infer", json=body, timeout=10).json()["outputs"]
    assert [o["name"] for o in outputs] == ["forecast", "lower", "upper"]
    assert all(o["shape"] == [1, 72] and o["datatype"] == "FP64" for o in outputs)
    forecast, lower, upper = (np.array(o["data"]) for o in outputs)
    assert (lower <= forecast).all() and (forecast <= upper).all() and (upper - lower)[-1] > (upper - lower)[0]
    # the scheduler's OIP source carries them as the source's bands, on the forecast's own grid
    source = OipSource(server.url, history=TraceSource.from_directory(spring_slice))
    bands = source.bands("DE", start, start + 24 * HOUR, start)
    assert bands is not None
    assert np.allclose(bands.lower.values, lower[:24]) and np.allclose(bands.upper.values, upper[:24])
    assert np.allclose(source.series("DE", start, start + 24 * HOUR, start).values, forecast[:24])


def test_scheduler_decides_on_the_served_forecast(mlops, spring_slice):
    _, server, _ = mlops
    body = {
        "number_of_jobs": 1,
        "eligible_regions": ["DE", "GB"],
        "deadline": "2023-04-12T06:00:00Z",
        "duration": 4,
        "cpu": 2,
        "memory": 4,
        "req_timeout": 20,
    }
    with SchedulerServer(
        source=f"oip:{server.url}", history=f"traces:{spring_slice}", env={"GREENOPS_NOW": "2023-04-10T06:00:00Z"}
    ) as scheduler:
        auth = {"Authorization": f"Bearer {scheduler.issue('forecast-user', ['default'])}"}
        r = httpx.post(f"{scheduler.url}/scheduling", json=body, timeout=30, headers=auth)
    assert r.status_code == 200, r.text
    decision = r.json()
    assert decision["source"].startswith(f"oip({server.url})")
    # The same search on the forecasts MLServer serves: forecaster-de for DE, forecaster-generic for GB
    source = OipSource(server.url, history=TraceSource.from_directory(spring_slice), fallback=ProfileSource())
    now, deadline = to_epoch(NOW), to_epoch(DEADLINE)
    forecasts = {z: source.series(z, now, deadline, now) for z in body["eligible_regions"]}
    assert source.answers == {"zone": 1, "generic": 1, "fallback": 0}
    expected = place_batch(forecasts, Job(2, 4, 4 * HOUR), 1, now, deadline, CapacityLedger(512), math.inf)[0]
    assert decision["scheduling_location"] == expected.zone
    assert decision["scheduling_time"] == stamp(datetime.fromtimestamp(expected.start, UTC))
    assert decision["expected_intensity"] == pytest.approx(expected.mean_intensity, abs=0.01)


def test_evaluation_harness_runs_on_model_forecasts(mlops, shared_data, tmp_path):
    from greenops.evaluation.__main__ import main

    _, server, _ = mlops
    assert (
        main(
            [
                "--data",
                str(shared_data),
                "--out",
                str(tmp_path),
                "--oip",
                server.url,
                "--jobs",
                "10",
                "--holdout-jobs",
                "30",
                "--holdout-from",
                "2023-03-25",
                "--burst",
                "10",
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "report.json").read_text())
    model = report["geo_temporal_holdout"]["ours (model)"]
    assert model["jobs"] == 30 and model["oracle_capture_percent"] is not None
    # DE asked its own model, the 15 other zones the generic one; nothing fell back
    assert model["answers"]["zone"] > 0 and model["answers"]["generic"] > 0 and model["answers"]["fallback"] == 0
    assert "ours (model)" in report["lets_wait_awhile"]["DE ±8h"]


def test_servers_stop_and_leave_no_process(mlops, tmp_path):
    _, _, exported = mlops
    with (
        MlflowServer(root=tmp_path / "mlflow") as registry,
        MlserverServer(repository=write_repository(exported, tmp_path / "repository")) as server,
    ):
        assert registry.running and server.running
    assert not registry.running and not server.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/v2/health/ready", timeout=2)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_forecast_serve_stops_its_mlserver_on_sigterm_or_ctrl_c(mlops, tmp_path, sig):
    """``greenops-forecast serve`` as a developer runs it, stopped as a terminal or a supervisor
    stops it: MLServer goes with it (a SIGTERM used to end the command and leave MLServer up)."""
    registry, _, _ = mlops
    port = free_port()
    argv = [
        str(REPO / ".venv" / "bin" / "greenops-forecast"),
        *("--tracking-uri", registry.url, "serve", "--port", str(port)),
        *("--export-dir", str(tmp_path / "models"), "--repository", str(tmp_path / "repository")),
    ]
    with CommandLines(argv) as serve:
        ready = serve.until(lambda line: line.startswith("MLServer on "))
        assert ready.startswith(f"MLServer on http://127.0.0.1:{port}"), serve.text
        assert httpx.get(f"http://127.0.0.1:{port}/v2/health/ready", timeout=5).status_code == 200
        serve.proc.send_signal(sig)
        code = serve.finish(timeout=60)
    assert code == 0, serve.text
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v2/health/ready", timeout=2)
