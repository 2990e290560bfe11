"""Run a real OPA server on loopback with the policy bundle (tests, benchmarks, ``greenops demo``)."""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from greenops.errors import GreenOpsError
from greenops.local.controlplane import free_port
from greenops.local.service import LoopbackService
from greenops.local.tools import tool_path

from .bundle import build, default_revision


@dataclass
class OpaServer(LoopbackService):
    """``with OpaServer(scheduler_url=...) as opa: opa.url`` builds the bundle and serves it."""

    scheduler_url: str | None = None
    bundle: Path | None = None
    startup_timeout: float = 30.0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-opa-")))
    port: int = 0
    _proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        bundle = self.bundle or build(self.workdir / "policy-bundle.tar.gz", default_revision())
        self.port = self.port or free_port()
        env = dict(os.environ)
        # Every query allocates; collecting less often trims the latency tail (measured in
        # benchmarks/policy_latency.py).
        env.setdefault("GOGC", "400")
        if self.scheduler_url:
            env["SCHEDULER_URL"] = self.scheduler_url
        self.log = self.workdir / "opa.log"
        self._proc = subprocess.Popen(
            # Read-optimised store: catalog lookups skip a JSON-to-AST conversion on every read.
            [tool_path("opa"), "run", "--server", "--addr", f"127.0.0.1:{self.port}", "--log-level", "error",
             "--optimize-store-for-read-speed",
             "--bundle", str(bundle)],
            stdout=self.log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise GreenOpsError(f"opa exited with code {self._proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health?bundles", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise GreenOpsError(f"opa did not become healthy within {self.startup_timeout:.0f}s")

    def stop(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
