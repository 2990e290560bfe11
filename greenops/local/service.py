"""The lifecycle every loopback helper shares: ``with Service() as s`` starts it and always stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Self

import httpx

from greenops.common.errors import GreenOpsError


class LoopbackService:
    """Subclasses implement start() and stop(); a failed start still stops what did start."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ProcessService(LoopbackService):
    """A loopback service run as one subprocess: launched, polled until ready, then terminated."""

    name = "service"
    startup_timeout: float = 30.0
    stop_timeout: float = 10.0  # grace after SIGTERM before SIGKILL
    port: int = 0
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _launch(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        # the child writes through its own copy of the descriptor: this process keeps none open
        with log.open("ab") as out:
            self._proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True
            )

    def _wait_ready(self, url: str) -> None:
        proc = self._proc
        assert proc is not None, "_launch starts the process first"
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise GreenOpsError(f"{self.name} exited with code {proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                # readiness only: a loopback server with its own throw-away certificate
                if httpx.get(url, timeout=1.0, verify=False).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise GreenOpsError(f"{self.name} did not become ready within {self.startup_timeout:.0f}s")

    def kill(self) -> None:
        """kill -9 of the process and everything it started (its session: a scheduler's workers too),
        reaped: nothing handed over, nothing flushed."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:  # self.running
            proc.terminate()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
