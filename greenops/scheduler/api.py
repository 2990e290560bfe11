"""The GreenOps scheduler service: ``POST /scheduling`` behind the thesis contract.

Request:  {number_of_jobs, eligible_regions: [Electricity Maps zones], deadline (RFC 3339),
           duration (hours), cpu, memory, req_timeout (seconds)}, optionally origin_zone.
Response: {scheduling_location, scheduling_time} plus the expected mean intensity, the baseline
          (run now at origin_zone, else the mean of running now in each eligible zone), the
          saving, and every placement of a batch.
Every booking is a reservation in the record (greenops.reservations): with a ``key`` a retry is
answered from it and books nothing new, and ``/reservations`` lists, updates and releases them.
Bad input is a 422 naming the field; a full calendar or a used-up quota a 409; a source that is
down, or no decision within req_timeout, a 503. Never a 5xx for what the caller sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import cast

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from greenops.dashboard import RecordData, dashboard_router
from greenops.reservations import ReservationStore
from greenops.scheduler import forecast_api, health_api, reservations_api, scheduling_api
from greenops.scheduler.auth import require_token
from greenops.scheduler.offload import SearchPool
from greenops.scheduler.ratelimit import TenantRateLimit
from greenops.scheduler.scheduling_api import MAX_WORK
from greenops.scheduler.sources.base import CarbonSource
from greenops.scheduler.state import Clock, SchedulerState

__all__ = ["MAX_WORK", "create_app"]  # MAX_WORK stays importable from here, where it always was


def create_app(
    source: CarbonSource,
    capacity_vcpu: float = 512.0,
    clock: Clock = lambda: datetime.now(UTC),
    token: str | None = None,
    store: ReservationStore | None = None,
    rate_limit: str | None = None,
) -> FastAPI:
    """The service around one carbon source and one reservation record (in memory when none is
    given: tests and one-off runs). What it holds is set on ``app.state``; the routes receive it
    through the dependencies of greenops.scheduler.state."""
    app = FastAPI(
        title="GreenOps scheduler",
        version="1.1.0",
        description="Carbon-aware geographic and temporal placement of delay-tolerant jobs.",
        lifespan=_close_searches,
    )
    state = SchedulerState(
        source=source,
        store=store or ReservationStore("sqlite://"),
        clock=clock,
        capacity_vcpu=capacity_vcpu,
        token=token,
        rate_limit=TenantRateLimit(rate_limit) if rate_limit else None,
        searches=SearchPool(),
    )
    app.state.scheduler = state
    app.add_exception_handler(RequestValidationError, _invalid_request)
    auth = [Depends(require_token)]
    app.include_router(health_api.router)
    app.include_router(scheduling_api.router, dependencies=auth)
    app.include_router(reservations_api.router, dependencies=auth)
    app.include_router(forecast_api.router, dependencies=auth)
    # The dashboard builds its router per app: it is shared with `greenops dashboard`'s loopback
    # app, which reads a scheduler over HTTP rather than this state.
    dashboard = dashboard_router(RecordData(state.store, state.source, state.clock), state.clock)
    app.include_router(dashboard, dependencies=auth)
    return app


@asynccontextmanager
async def _close_searches(app: FastAPI) -> AsyncIterator[None]:
    yield
    app.state.scheduler.searches.close()  # the worker process of large searches, if one was started


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    # Pydantic's errors, reduced to what a caller needs: each field's path and message (registered for
    # RequestValidationError alone; Starlette types every handler for Exception)
    errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in cast(RequestValidationError, exc).errors()]
    detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in errors)
    return JSONResponse(status_code=422, content={"detail": detail, "errors": errors})
