"""MLflow: one parent run per training, a nested run per model, each model registered as
``forecaster-<zone>`` / ``forecaster-generic`` with the ``champion`` alias on its newest version.

The pyfunc artifact carries the forecaster's code by value (cloudpickle), so a server needs only
the pinned libraries in the model's requirements.txt, never this package.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import cloudpickle
import httpx
import mlflow
import numpy as np
from mlflow import MlflowClient
from mlflow.models import infer_signature

from greenops.common.errors import GreenOpsError
from greenops.models import forecast_features as features
from greenops.models.forecast_features import HISTORY_HOURS, INPUT_NAME
from greenops.models.forecast_names import PREFIX

from . import estimator, pyfunc
from .training import TrainingReport, ZoneResult

EXPERIMENT = "greenops-forecasting"
ALIAS = "champion"
# What a serving environment must provide; tools/mlserver/requirements.txt pins the same versions.
SERVING_PACKAGES = ("mlflow", "scikit-learn", "numpy", "cloudpickle")


def serving_requirements() -> list[str]:
    return [f"{p}=={version(p)}" for p in SERVING_PACKAGES]


class TrackingUnavailable(GreenOpsError):
    """The tracking server does not answer: said at once, instead of after MLflow's retries."""


def use_tracking(uri: str, artifacts: Path | None = None) -> None:
    """Point MLflow at ``uri``; with a local database, keep artifacts beside it rather than in ./mlruns."""
    if uri.startswith(("http://", "https://")):
        try:
            httpx.get(f"{uri.rstrip('/')}/health", timeout=5).raise_for_status()
        except httpx.HTTPError as exc:
            raise TrackingUnavailable(f"MLflow tracking server at {uri} is unreachable: {exc}") from exc
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(EXPERIMENT) is None:
        location = artifacts.resolve().as_uri() if artifacts and not uri.startswith("http") else None
        mlflow.create_experiment(EXPERIMENT, artifact_location=location)
    mlflow.set_experiment(EXPERIMENT)


def _log_model(result: ZoneResult, report: TrainingReport, client: MlflowClient, register: bool) -> str | None:
    wrapper = pyfunc.OipForecaster(result.model)
    example = result.test.rows[:2]
    signature = infer_signature({INPUT_NAME: example}, wrapper.predict(None, {INPUT_NAME: example}))
    with mlflow.start_run(run_name=result.name, nested=True):
        mlflow.set_tags({"greenops.zone": result.zone, "greenops.model": result.name})
        mlflow.log_params(
            {
                "zone": result.zone,
                "alpha": report.alpha,
                "horizon_hours": report.horizon,
                "history_hours": HISTORY_HOURS,
                "level_hours": estimator.LEVEL_HOURS,
                "holdout_from": report.holdout_from.isoformat(),
                "n_train": result.n_train,
                "n_test": result.n_test,
                "n_parameters": result.model.n_parameters,
            }
        )
        metrics = {
            k if name == "model" else f"{name}.{k}": v
            for name, values in result.scores.items()
            for k, v in values.items()
            if np.isfinite(v)
        }
        mlflow.log_metrics({**metrics, "fit_seconds": result.fit_seconds})
        info = mlflow.pyfunc.log_model(
            name="model",
            python_model=wrapper,
            signature=signature,
            input_example={INPUT_NAME: example[:1]},
            pip_requirements=serving_requirements(),
            registered_model_name=result.name if register else None,
            metadata={"greenops_contract": "OIP v2: features FP64 [n, 171] -> [n, horizon] gCO2eq/kWh"},
        )
    if not register:
        return None
    client.set_registered_model_alias(result.name, ALIAS, info.registered_model_version)
    client.update_registered_model(
        result.name,
        description=(
            f"Hourly carbon intensity of {result.zone} for the next {report.horizon} h from the last "
            f"{HISTORY_HOURS} h (greenops forecaster; OIP input '{INPUT_NAME}')."
        ),
    )
    return str(info.registered_model_version)


def log_training(report: TrainingReport, files: list[Path], register: bool = True) -> dict[str, str | None]:
    """Log ``report`` to the current tracking URI (see use_tracking); returns name -> registered version."""
    for module in (features, estimator, pyfunc):
        cloudpickle.register_pickle_by_value(module)
    client = MlflowClient()
    versions = {}
    with mlflow.start_run(run_name=f"train-holdout-{report.holdout_from:%Y-%m-%d}"):
        mlflow.log_params(
            {
                "zones": ",".join(r.zone for r in report.zones),
                "horizon_hours": report.horizon,
                "alpha": report.alpha,
                "holdout_from": report.holdout_from.isoformat(),
            }
        )
        for path in files:
            mlflow.log_artifact(str(path))
        for result in [*report.zones, report.generic]:
            versions[result.name] = _log_model(result, report, client, register)
    return versions


def champions(client: MlflowClient, names: list[str] | None = None) -> dict[str, str]:
    """name -> version carrying the champion alias, for ``names`` or every registered forecaster."""
    if names is None:
        names = sorted(m.name for m in client.search_registered_models() if m.name.startswith(PREFIX))
    out = {}
    for name in names:
        try:
            out[name] = str(client.get_model_version_by_alias(name, ALIAS).version)
        except mlflow.exceptions.MlflowException as exc:
            raise LookupError(f"model {name} has no version with alias {ALIAS!r} in the registry") from exc
    return out


def export(dest: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Download every champion into ``dest/<name>/``: the MLflow model directory exactly as a KServe
    InferenceService's storageUri (``<prefix>/<name>``) expects it."""
    client = MlflowClient()
    chosen = champions(client, names)
    if not chosen:
        raise LookupError(f"no registered forecaster-* model at {mlflow.get_tracking_uri()}")
    out = {}
    for name, ver in chosen.items():
        target = dest / name
        if target.exists():
            for path in sorted(target.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
        target.mkdir(parents=True, exist_ok=True)
        mlflow.artifacts.download_artifacts(artifact_uri=f"models:/{name}/{ver}", dst_path=str(target))
        (target / "registered_model_version.json").write_text(json.dumps({"name": name, "version": ver}))
        out[name] = target
    return out
