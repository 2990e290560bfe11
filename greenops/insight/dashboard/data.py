"""Where the dashboard reads from: what it needs (``DashboardData``), and a scheduler over HTTP
(``greenops dashboard``). The scheduler service gives the same shapes from its own record and
carbon source (greenops.scheduler.dashboard)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import quote

from greenops.common.clock import parse_time
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail
from greenops.reservations import AmbiguousKey


@dataclass(frozen=True)
class Forecast:
    zone: str
    source: str
    start: float  # epoch seconds
    step: float
    values: list[float]


class DashboardData(Protocol):
    def reservations(self, filters: dict[str, str], ended_after: datetime) -> list[dict[str, Any]]:
        """The reservations matching ``filters`` (tenant, provider, region, phase) that are active
        or ended after ``ended_after``, with their decision-time detail (the listing's shape)."""

    def reservation(self, key: str, tenant: str | None = None) -> dict[str, Any] | None:
        """One reservation with its decision-time detail, None for an unknown key: ``tenant``'s, or
        the one tenant's that holds it (AmbiguousKey when several do)."""

    def forecast(self, zone: str, start: datetime, end: datetime) -> Forecast:
        """The carbon source's series for ``zone`` over [start, end)."""


class SchedulerData:
    """A scheduler over HTTP, with its bearer token."""

    def __init__(self, client: RetryingClient):
        self._client = client

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        r = self._client.request("GET", path, params=params)
        if r is None or r.status_code != 200:
            why = detail(r) if r is not None else self._client.last_error
            raise GreenOpsError(f"the scheduler at {self._client.url} did not answer GET {path} ({why})")
        body: dict[str, Any] = r.json()
        return body

    def reservations(self, filters: dict[str, str], ended_after: datetime) -> list[dict[str, Any]]:
        params = {"all": "true", "detail": "true", "ended_after": ended_after.isoformat(), **filters}
        rows: list[dict[str, Any]] = self._get("/reservations", params)["reservations"]
        return rows

    def reservation(self, key: str, tenant: str | None = None) -> dict[str, Any] | None:
        params = {"tenant": tenant} if tenant is not None else None
        r = self._client.request("GET", f"/reservations/{quote(key, safe='/')}", params=params)
        if r is not None and r.status_code == 404:
            return None
        if r is not None and r.status_code == 409:
            raise AmbiguousKey(detail(r))
        if r is None or r.status_code != 200:
            why = detail(r) if r is not None else self._client.last_error
            raise GreenOpsError(f"the scheduler at {self._client.url} did not answer GET /reservations/{key} ({why})")
        row: dict[str, Any] = r.json()
        return row

    def forecast(self, zone: str, start: datetime, end: datetime) -> Forecast:
        f = self._get(f"/forecast/{zone}", {"start": start.isoformat(), "end": end.isoformat()})
        return Forecast(f["zone"], f["source"], parse_time(f["start"]).timestamp(), f["step_seconds"], f["values"])
