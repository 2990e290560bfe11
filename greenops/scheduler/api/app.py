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

from greenops.common.clock import Clock
from greenops.common.errors import cut
from greenops.identity import Forbidden, Invisible
from greenops.identity.kubernetes import TokenReviewer
from greenops.identity.principals import Declared
from greenops.identity.tokens import TokenStore, digest
from greenops.intensity.base import CarbonSource
from greenops.intensity.cached import CachedSource
from greenops.observability import tracing
from greenops.policies.settings import PolicySettings, load_policy_settings
from greenops.reservations import AmbiguousKey, ReservationStore
from greenops.scheduler.api import (
    completion,
    credentials,
    forecast,
    health,
    outages,
    prometheus,
    reservations,
    scheduling,
    stacks,
)
from greenops.scheduler.api.prometheus import RequestTimer
from greenops.scheduler.auth import ADMIN, Authenticator, requires
from greenops.scheduler.decider import Decider
from greenops.scheduler.limits import BodyLimit
from greenops.scheduler.metrics import SchedulerMetrics
from greenops.scheduler.orphan_sweep import OrphanSweep
from greenops.scheduler.outlook import RecordedOutlook
from greenops.scheduler.queueing import QueueSettings
from greenops.scheduler.ratelimit import PrincipalRateLimit
from greenops.scheduler.state import SchedulerState
from greenops.search.offload import SearchPool

__all__ = ["InsecureConfiguration", "create_app"]


class InsecureConfiguration(ValueError):
    """The scheduler was asked to run with no way to authenticate its callers."""


def create_app(
    source: CarbonSource,
    capacity_vcpu: float = 512.0,
    clock: Clock = lambda: datetime.now(UTC),
    admin_tokens: list[str] | None = None,
    store: ReservationStore | None = None,
    rate_limit: str | None = None,
    principals: Declared | None = None,
    reviewer: TokenReviewer | None = None,
    policy: PolicySettings | None = None,
    scarcity_price: bool = False,
    orphan_sweep: OrphanSweep | None = None,
    queue: QueueSettings | None = None,
) -> FastAPI:
    """The service around one carbon source and one reservation record (in memory when none is
    given: tests and one-off runs). What it holds is set on ``app.state``; the routes receive it
    through the dependencies of greenops.scheduler.state.

    Every route but the health probes needs a credential: ``admin_tokens`` (the bootstrap admin's,
    from a Secret), the static tokens and ServiceAccounts ``principals`` declares (the latter checked
    through ``reviewer``), or the API tokens it issues. With none of the first two there would be no
    caller it could serve, so it refuses to be built. ``scarcity_price`` weighs the capacity each
    booking fills (greenops.scheduler.outlook)."""
    declared = principals or Declared()
    if declared.by_account and reviewer is None:
        raise InsecureConfiguration("ServiceAccount principals need a TokenReview client to check their tokens")
    if not admin_tokens and not declared.by_digest and not declared.by_account:
        raise InsecureConfiguration(
            "the scheduler needs an admin token (GREENOPS_SCHEDULER_ADMIN_TOKEN or --admin-token-file) "
            "or declared principals (--principals): it never serves unauthenticated callers "
            "(GREENOPS_SCHEDULER_TOKEN, the old shared token, is not read any more: issue each caller its "
            "own with `greenops token issue`)"
        )
    if any(not t for t in admin_tokens or []):
        raise InsecureConfiguration("an admin token is empty")
    app = FastAPI(
        title="GreenOps scheduler",
        version="1.1.0",
        description="Carbon-aware geographic and temporal placement of delay-tolerant jobs.",
        lifespan=_lifespan,
        # only the health probes answer without a credential: the schema is served below to a
        # reader, and the interactive pages (which load scripts from a CDN) are not served at all
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    record = store or ReservationStore("sqlite://")
    metrics = SchedulerMetrics(record, capacity_vcpu)
    state = SchedulerState(
        source=metrics.measured(CachedSource(source)),
        store=record,
        clock=clock,
        capacity_vcpu=capacity_vcpu,
        auth=Authenticator(
            TokenStore(record),
            {**declared.by_digest, **{digest(t): ADMIN for t in admin_tokens or []}},
            reviewer,
            clock,
        ),
        policy=policy or load_policy_settings(),
        rate_limit=PrincipalRateLimit(rate_limit) if rate_limit else None,
        searches=SearchPool(),
        metrics=metrics,
        price=RecordedOutlook(record) if scarcity_price else None,
        orphan_sweep=orphan_sweep or OrphanSweep(),
        queue=queue or QueueSettings(),
    )
    app.state.scheduler = state
    # Bodies are bounded before they are read into memory (413 naming the limit).
    app.add_middleware(BodyLimit)
    # Outermost (added last), so it times what the caller waits for, the 413s above included.
    app.add_middleware(RequestTimer, histogram=metrics.requests)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Forbidden, _forbidden)
    app.add_exception_handler(Invisible, _invisible)
    app.add_exception_handler(AmbiguousKey, _ambiguous)
    app.include_router(health.router)
    # Each route asks for the role it needs (greenops.scheduler.auth); reads need only read.
    app.include_router(scheduling.router)
    app.include_router(reservations.router)
    app.include_router(completion.router)  # its own credential: the run's completion token
    app.include_router(credentials.router)
    app.include_router(stacks.router)
    app.include_router(outages.router)
    app.include_router(forecast.router, dependencies=[Depends(requires("read"))])
    app.include_router(prometheus.router)  # a read credential for every tenant (api/prometheus.py)
    app.add_api_route(
        "/openapi.json",
        lambda: JSONResponse(app.openapi()),
        include_in_schema=False,
        dependencies=[Depends(requires("read"))],
    )

    # spans for requests and the record's statements, when this process exports traces
    tracing.instrument_app(app)
    tracing.instrument_engine(record.engine)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    state: SchedulerState = app.state.scheduler
    sweeping = state.orphan_sweep.start(state.store, state.clock)
    state.admitter.start(state.store, state.clock, lambda row: Decider.of(state).admit(row), state.queue.every)
    try:
        yield
    finally:
        state.admitter.stop()
        sweeping.stop()
        state.searches.close()  # the worker process of large searches, if one was started


async def _forbidden(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=403, content={"detail": str(exc)})


async def _invisible(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": str(exc)})


async def _ambiguous(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=409, content={"detail": str(exc)})


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    # Pydantic's errors, reduced to what a caller needs: each field's path and message (registered for
    # RequestValidationError alone; Starlette types every handler for Exception). A dict's key is
    # part of the path and comes from the caller, of any length, so each part is cut.
    errors = [
        {"loc": [p if isinstance(p, int) else cut(str(p)) for p in e["loc"]], "msg": e["msg"]}
        for e in cast(RequestValidationError, exc).errors()
    ]
    detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in errors)
    return JSONResponse(status_code=422, content={"detail": detail, "errors": errors})
