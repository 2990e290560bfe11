"""The hostile-tenant suite's servers: one real scheduler on loopback, its admin, and a token per
principal a test plays (each tenant's own, OPA's cluster-path one, a reader's)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from greenops.reservations import ReservationStore

NOW = "2027-01-10T03:00:00Z"


def booking(**over: object) -> dict:
    body: dict = {
        "eligible_regions": ["FR", "DE"],
        "deadline": "2027-01-11T03:00:00Z",
        "duration": 2,
        "cpu": 4,
        "memory": 8,
    }
    body.update(over)
    return body


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


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    log = tmp_path_factory.mktemp("hostile") / "scheduler.log"
    with SchedulerServer(log=log, env={"GREENOPS_NOW": NOW}) as sched:
        yield Tenancy(
            sched,
            team_a=sched.issue("team-a-ci", ["team-a"], paths=["pulumi"]),
            team_b=sched.issue("team-b-ci", ["team-b"], paths=["pulumi"]),
            media=sched.issue("media-ci", ["media"], paths=["pulumi"]),
            opa=sched.issue("opa", None, paths=["cluster"]),
            reader=sched.issue("dashboard", None, paths=["api"], role="read"),
            reader_a=sched.issue("team-a-viewer", ["team-a"], paths=["api"], role="read"),
        )
