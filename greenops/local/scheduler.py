"""The real scheduler service as a subprocess on loopback (tests, benchmarks, ``greenops serve``)."""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

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
    # The bootstrap admin's token: a fresh random one unless given. Callers get their own tokens from
    # issue(); the admin token is for issuing them and for tests that act as the platform's admin.
    admin_token: str = field(default_factory=lambda: secrets.token_hex(24))
    principals: Path | None = None  # declared principals (greenops.identity.principals)
    kubeconfig: Path | None = None
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
                *(["--principals", str(self.principals)] if self.principals else []),
                *(["--kubeconfig", str(self.kubeconfig)] if self.kubeconfig else []),
            ],
            self.log,
            env={
                # the caller's own credential (a client's variable) is not the server's business
                **{k: v for k, v in os.environ.items() if k != "GREENOPS_SCHEDULER_TOKEN"},
                **self.env,
                "GREENOPS_SCHEDULER_DATABASE": self.database,
                "GREENOPS_SCHEDULER_ADMIN_TOKEN": self.admin_token,
            },
        )
        self._wait_ready(f"{self.url}/readyz")

    @property
    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def issue(
        self,
        name: str,
        tenants: Sequence[str] | None,
        paths: Sequence[str] = ("pulumi", "api"),
        role: str = "write",
    ) -> str:
        """A new API token for ``tenants`` (None: every tenant, for read and admin), as
        ``greenops token issue`` makes one."""
        return issue_credential(self.url, self.admin_token, name, tenants, paths, role)


def issue_credential(
    url: str,
    admin_token: str,
    name: str,
    tenants: Sequence[str] | None,
    paths: Sequence[str] = ("pulumi", "api"),
    role: str = "write",
) -> str:
    """A new API token from the scheduler at ``url``, asked as its bootstrap admin: for a scheduler
    started here or one running anywhere else (in a pod, behind its Service)."""
    body = {"name": name, "role": role, "tenants": None if tenants is None else list(tenants), "paths": list(paths)}
    r = httpx.post(f"{url}/credentials", json=body, headers={"Authorization": f"Bearer {admin_token}"}, timeout=10)
    r.raise_for_status()
    token: str = r.json()["token"]
    return token
