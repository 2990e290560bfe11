"""The cluster path's controller as a subprocess on loopback (tests, ``greenops demo``)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from greenops.common.errors import GreenOpsError
from greenops.local.service import ProcessService


@dataclass
class ControllerProcess(ProcessService):
    scheduler_url: str = ""
    token: str = ""  # its scheduler credential (the report role on the cluster path)
    kubeconfig: Path | None = None
    identity: str = "controller"
    lease_namespace: str = "default"
    lease_seconds: float = 4.0
    renew_deadline: float = 3.0
    sweep_seconds: float = 2.0
    resync_seconds: float = 1.0
    readiness: str = "operator"  # applied: no cloud operator runs here (the demo)
    clock_file: Path | None = None  # a simulated clock the caller plays forward (greenops.common.clock)
    metrics_port: int | None = None  # serve /metrics on 127.0.0.1 at this port
    completion_url: str | None = None  # --completion-url: where a VmTemplate's run reports its end
    # more flags, after the ones above: the last of a repeated flag wins (a Deployment's own args)
    extra_args: list[str] = field(default_factory=list)
    log: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-ctl-")) / "controller.log")
    name = "controller"

    def start(self) -> None:
        self._launch(
            [
                sys.executable,
                "-m",
                "greenops.controller",
                "--scheduler-url",
                self.scheduler_url,
                "--lease-namespace",
                self.lease_namespace,
                "--identity",
                self.identity,
                "--lease-seconds",
                str(self.lease_seconds),
                "--renew-deadline",
                str(self.renew_deadline),
                "--sweep-seconds",
                str(self.sweep_seconds),
                "--resync-seconds",
                str(self.resync_seconds),
                "--readiness",
                self.readiness,
                *(["--kubeconfig", str(self.kubeconfig)] if self.kubeconfig else []),
                *(["--metrics-port", str(self.metrics_port)] if self.metrics_port is not None else []),
                *(["--completion-url", self.completion_url] if self.completion_url else []),
                *self.extra_args,
            ],
            self.log,
            env={
                **os.environ,
                "GREENOPS_CONTROLLER_TOKEN": self.token,
                **({"GREENOPS_CLOCK_FILE": str(self.clock_file)} if self.clock_file else {}),
            },
        )

    def wait_leading(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise GreenOpsError(f"controller exited: {self.log.read_text()[-2000:]}")
            if "leading as" in self.log.read_text(errors="replace"):
                return
            time.sleep(0.1)
        raise GreenOpsError(f"controller {self.identity} did not lead within {timeout:.0f}s")

    def passes(self) -> int:
        """How many lifecycle passes this process has finished."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text.count(" INFO greenops.controller.passes lifecycle pass: ")

    def wait_passes(self, n: int, timeout: float = 30.0) -> None:
        """Until ``n`` more lifecycle passes have finished: a clock moved before this call has been seen."""
        target = self.passes() + n
        deadline = time.monotonic() + timeout
        while self.passes() < target:
            if time.monotonic() > deadline:
                raise GreenOpsError(f"controller {self.identity}: {n} lifecycle passes not done within {timeout:.0f}s")
            time.sleep(0.1)

    def actions(self) -> list[str]:
        """The actions this process took, in order: "confirmed <key>", "released <key>",
        "<phase> <key>: <reason>"."""
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return [a for a in map(action_of, lines) if a is not None]


def actions_when(processes: Sequence[ControllerProcess], *wanted: str, timeout: float = 10.0) -> list[str]:
    """The actions of ``processes`` together, once each of ``wanted`` is among them. A controller
    logs what it did after the scheduler has answered it, so a test that has just seen the record
    change must wait for the line before it counts."""
    deadline = time.monotonic() + timeout
    while True:
        actions = [a for p in processes for a in p.actions()]
        missing = [w for w in wanted if w not in actions]
        if not missing:
            return actions
        if time.monotonic() > deadline:
            raise GreenOpsError(f"controllers {[p.identity for p in processes]} never logged {missing}: {actions}")
        time.sleep(0.05)


def action_of(line: str) -> str | None:
    """The action a controller's log line records, or None when it records none."""
    if " greenops.controller.record_keeper " in line and " INFO " in line and "not leading" not in line:
        return line.split(" greenops.controller.record_keeper ", 1)[1]
    return None
