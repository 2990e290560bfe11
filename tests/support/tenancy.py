"""The hostile-tenant suite's scheduler and the token of each principal a test plays."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from greenops.local.scheduler import SchedulerServer
from greenops.reservations import ReservationStore


@dataclass
class Tenancy:
    sched: SchedulerServer
    team_a: str
    team_b: str
    media: str  # a tenant with a quota in policy (greenops/policies/defaults.yaml: 128 vCPU)
    opa: str  # the cluster path's writer, every tenant
    reader: str  # reads every tenant, writes nothing
    reader_a: str  # reads team-a only

    def call(self, method: str, path: str, token: str | None, **kw: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.request(method, f"{self.sched.url}{path}", headers=headers, timeout=15, **kw)  # type: ignore[arg-type]

    def row(self, key: str) -> dict | None:
        store = ReservationStore(self.sched.database or "")
        try:
            return store.get(key)
        finally:
            store.close()
