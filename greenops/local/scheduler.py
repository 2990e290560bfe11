"""The real scheduler service as a subprocess on loopback (tests, benchmarks, ``greenops serve``)."""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from greenops.local.controlplane import free_port
from greenops.local.service import ProcessService


@dataclass
class SchedulerServer(ProcessService):
    source: str = "profiles"
    history: str | None = None
    capacity_vcpu: float = 512
    startup_timeout: float = 30.0
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    token: str | None = None  # the bearer token callers must send
    database: str | None = None  # the reservation record; a fresh SQLite file next to the log when None
    log: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-sched-")) / "scheduler.log")
    name = "scheduler"

    def start(self) -> None:
        self.port = self.port or free_port()
        self.database = self.database or f"sqlite:///{self.log.parent / 'reservations.db'}"
        self._launch(
            [
                sys.executable,
                "-m",
                "greenops.scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--source",
                self.source,
                "--capacity-vcpu",
                str(self.capacity_vcpu),
                *(["--history", self.history] if self.history else []),
            ],
            self.log,
            env={
                **os.environ,
                **self.env,
                "GREENOPS_SCHEDULER_DATABASE": self.database,
                **({"GREENOPS_SCHEDULER_TOKEN": self.token} if self.token else {}),
            },
        )
        self._wait_ready(f"{self.url}/readyz")
