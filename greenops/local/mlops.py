"""A real MLflow tracking server and a real MLServer on loopback (tests, ``greenops-forecast serve``)."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from greenops.errors import GreenOpsError
from greenops.local.controlplane import free_port
from greenops.local.service import ProcessService
from greenops.local.tools import mlserver_path

MLFLOW_RUNTIME = "mlserver_mlflow.MLflowRuntime"


@dataclass
class MlflowServer(ProcessService):
    """``mlflow server`` with a sqlite backend store and a local artifact store proxied by the
    server (clients upload through ``mlflow-artifacts:/``, as they would to SeaweedFS in a cluster)."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-mlflow-")))
    port: int = 0
    startup_timeout: float = 90.0
    name = "mlflow server"

    def start(self) -> None:
        self.port = self.port or free_port()
        self.root.mkdir(parents=True, exist_ok=True)
        self._launch([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port),
                      "--workers", "1", "--backend-store-uri", f"sqlite:///{self.root / 'mlflow.db'}",
                      "--artifacts-destination", str(self.root / "artifacts")],
                     self.root / "mlflow.log", env={**os.environ, "MLFLOW_TRACKING_URI": ""})
        self._wait_ready(f"{self.url}/health")


def write_repository(models: dict[str, Path], repository: Path) -> Path:
    """An MLServer model repository: ``<name>/model-settings.json`` pointing at each exported MLflow
    model, kept apart from the model directories so those stay exactly what KServe is given."""
    repository.mkdir(parents=True, exist_ok=True)
    for name, path in models.items():
        (repository / name).mkdir(exist_ok=True)
        settings = {"name": name, "implementation": MLFLOW_RUNTIME, "parameters": {"uri": str(Path(path).resolve())}}
        (repository / name / "model-settings.json").write_text(json.dumps(settings, indent=1))
    return repository


@dataclass
class MlserverServer(ProcessService):
    """MLServer serving a repository written by ``write_repository`` over OIP v2 (REST)."""

    repository: Path = Path(".")
    port: int = 0
    host: str = "127.0.0.1"
    startup_timeout: float = 120.0
    name = "MLServer"

    def start(self) -> None:
        self.port = self.port or free_port()
        models = sorted(p.parent.name for p in self.repository.glob("*/model-settings.json"))
        if not models:
            raise GreenOpsError(f"no model-settings.json below {self.repository}: nothing to serve")
        # in-process inference (parallel_workers 0): one small model per zone needs no worker pool
        settings = {"host": self.host, "http_port": self.port, "grpc_port": free_port(),
                    "metrics_port": free_port(), "parallel_workers": 0, "debug": False}
        (self.repository / "settings.json").write_text(json.dumps(settings, indent=1))
        self._launch([mlserver_path(), "start", str(self.repository)], self.repository / "mlserver.log",
                     env={k: v for k, v in os.environ.items() if not k.startswith("MLSERVER_")})
        self._wait_ready(f"{self.url}/v2/health/ready")
        for model in models:
            r = httpx.get(f"{self.url}/v2/models/{model}/ready", timeout=5)
            if r.status_code != 200:
                raise GreenOpsError(f"MLServer did not load {model}: {self.log.read_text()[-2000:]}")
        self.models = models
