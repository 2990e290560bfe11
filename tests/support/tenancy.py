"""The hostile-tenant suite's scheduler and the token of each principal a test plays."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from sqlalchemy import select

from greenops.local.scheduler import SchedulerServer
from greenops.reservations import ReservationStore
from greenops.reservations.tables import reservations


@dataclass
class Tenancy:
    sched: SchedulerServer
    team_a: str
    team_b: str
    media: str  # a tenant with a quota in policy (greenops/policies/defaults.yaml: 128 vCPU)
    opa: str  # the cluster path's writer, every tenant
    reader: str  # reads every tenant, writes nothing
    reader_a: str  # reads team-a only

    @classmethod
    def issued(cls, sched: SchedulerServer) -> Tenancy:
        """A token issued on ``sched`` for each principal the hostile suites play."""
        return cls(
            sched,
            team_a=sched.issue("team-a-ci", ["team-a"], paths=["pulumi"]),
            team_b=sched.issue("team-b-ci", ["team-b"], paths=["pulumi"]),
            media=sched.issue("media-ci", ["media"], paths=["pulumi"]),
            opa=sched.issue("opa", None, paths=["cluster"]),
            reader=sched.issue("dashboard", None, paths=["api"], role="read"),
            reader_a=sched.issue("team-a-viewer", ["team-a"], paths=["api"], role="read"),
        )

    def call(self, method: str, path: str, token: str | None, **kw: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.request(method, f"{self.sched.url}{path}", headers=headers, timeout=15, **kw)  # type: ignore[arg-type]

    def row(self, key: str, tenant: str | None = None) -> dict | None:
        """The record's row of ``key``, read from its database: ``tenant``'s, or with none the one
        row of that key (a key two tenants hold is an error of the test: name the tenant)."""
        query = select(reservations).where(reservations.c.key == key)
        if tenant is not None:
            query = query.where(reservations.c.tenant == tenant)
        store = ReservationStore(self.sched.database or "")
        try:
            with store.reading("test") as conn:
                rows = [dict(r) for r in conn.execute(query).mappings()]
        finally:
            store.close()
        assert len(rows) <= 1, f"{key} is held by tenants {sorted(r['tenant'] for r in rows)}: name one"
        return rows[0] if rows else None
