"""The dashboard as the scheduler serves it: ``/dashboard`` over its own record and carbon source,
each caller shown the tenants its principal may read. The entry point mounts it
(``mount_dashboard``); the app itself (greenops.scheduler.api) knows nothing of it."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from fastapi import FastAPI

from greenops.common.clock import Clock
from greenops.identity import Principal
from greenops.insight.dashboard import Forecast, dashboard_router
from greenops.intensity.base import CarbonSource
from greenops.reservations import PENDING, ListingFilter, ReservationStore, queue, resolve
from greenops.scheduler.api.reservations import out
from greenops.scheduler.auth import requires
from greenops.scheduler.state import SchedulerState


class RecordData:
    """Inside the scheduler: its reservation store and carbon source."""

    def __init__(
        self, store: ReservationStore, source: CarbonSource, clock: Clock, tenants: Collection[str] | None = None
    ):
        """``tenants``: the only tenants shown (the caller's); None shows every tenant."""
        self._store, self._source, self._clock, self._tenants = store, source, clock, tenants

    def reservations(self, filters: dict[str, str], ended_after: datetime) -> list[dict[str, Any]]:
        rows = self._store.list(ListingFilter(**filters, all=True, ended_after=ended_after), tenants=self._tenants)
        places = queue.positions(self._store, self._clock()) if any(r["phase"] == PENDING for r in rows) else {}
        return [out(r, True, places.get((r["tenant"], r["key"]))).model_dump(mode="json") for r in rows]

    def reservation(self, key: str, tenant: str | None = None) -> dict[str, Any] | None:
        # among the caller's tenants only; AmbiguousKey when several hold the key and none is named
        row = resolve(self._store, key, self._tenants, tenant)
        if row is None:
            return None
        return out(row, detail=True).model_dump(mode="json")

    def forecast(self, zone: str, start: datetime, end: datetime) -> Forecast:
        s = self._source.series(zone, start.timestamp(), end.timestamp(), self._clock().timestamp())
        return Forecast(zone, self._source.describe(), float(s.start), float(s.step), [float(v) for v in s.values])


def mount_dashboard(app: FastAPI) -> FastAPI:
    """``app`` (from create_app) with the dashboard under /dashboard, behind the read role. The
    dashboard's router is built per app: it is shared with `greenops dashboard`'s loopback app, which
    reads a scheduler over HTTP rather than this state."""
    state: SchedulerState = app.state.scheduler

    def visible(principal: Principal) -> RecordData:
        return RecordData(state.store, state.source, state.clock, tenants=principal.readable(None))

    app.include_router(dashboard_router(visible, state.clock, reader=requires("read")))
    return app
