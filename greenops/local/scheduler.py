"""The real scheduler service as a subprocess on loopback (tests, benchmarks, ``greenops demo``)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from greenops.errors import GreenOpsError
from greenops.local.controlplane import free_port
from greenops.local.service import LoopbackService


@dataclass
class SchedulerServer(LoopbackService):
    source: str = "profiles"
    capacity_vcpu: float = 512
    startup_timeout: float = 30.0
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    log: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-sched-")) / "scheduler.log")
    _proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = self.port or free_port()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "greenops.scheduler", "--host", "127.0.0.1", "--port", str(self.port),
             "--source", self.source, "--capacity-vcpu", str(self.capacity_vcpu)],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env}, start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise GreenOpsError(f"scheduler exited with code {self._proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise GreenOpsError(f"scheduler did not become ready within {self.startup_timeout:.0f}s")

    def stop(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
