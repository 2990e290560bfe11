"""Where the dashboard reads from: the scheduler's own record and carbon source (in the service),
or a scheduler over HTTP (``greenops dashboard``). Both give the same shapes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from greenops.common.clock import parse_time
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail
from greenops.reservations import ListingFilter, ReservationStore

if TYPE_CHECKING:
    from greenops.scheduler.sources.base import CarbonSource
    from greenops.scheduler.state import Clock


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

    def reservation(self, key: str) -> dict[str, Any] | None:
        """One reservation with its decision-time detail, None for an unknown key."""

    def forecast(self, zone: str, start: datetime, end: datetime) -> Forecast:
        """The carbon source's series for ``zone`` over [start, end)."""


class RecordData:
    """Inside the scheduler: its reservation store and carbon source."""

    def __init__(
        self, store: ReservationStore, source: CarbonSource, clock: Clock, tenants: Collection[str] | None = None
    ):
        """``tenants``: the only tenants shown (the caller's); None shows every tenant."""
        self._store, self._source, self._clock, self._tenants = store, source, clock, tenants

    def reservations(self, filters: dict[str, str], ended_after: datetime) -> list[dict[str, Any]]:
        from greenops.scheduler.reservations_api import out

        rows = self._store.list(ListingFilter(**filters, all=True, ended_after=ended_after), tenants=self._tenants)
        return [out(r, detail=True).model_dump(mode="json") for r in rows]

    def reservation(self, key: str) -> dict[str, Any] | None:
        from greenops.scheduler.reservations_api import out

        row = self._store.get(key)
        if row is None or (self._tenants is not None and row["tenant"] not in self._tenants):
            return None
        return out(row, detail=True).model_dump(mode="json")

    def forecast(self, zone: str, start: datetime, end: datetime) -> Forecast:
        s = self._source.series(zone, start.timestamp(), end.timestamp(), self._clock().timestamp())
        return Forecast(zone, self._source.describe(), float(s.start), float(s.step), [float(v) for v in s.values])


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

    def reservation(self, key: str) -> dict[str, Any] | None:
        r = self._client.request("GET", f"/reservations/{quote(key, safe='/')}")
        if r is not None and r.status_code == 404:
            return None
        if r is None or r.status_code != 200:
            why = detail(r) if r is not None else self._client.last_error
            raise GreenOpsError(f"the scheduler at {self._client.url} did not answer GET /reservations/{key} ({why})")
        row: dict[str, Any] = r.json()
        return row

    def forecast(self, zone: str, start: datetime, end: datetime) -> Forecast:
        f = self._get(f"/forecast/{zone}", {"start": start.isoformat(), "end": end.isoformat()})
        return Forecast(f["zone"], f["source"], parse_time(f["start"]).timestamp(), f["step_seconds"], f["values"])
