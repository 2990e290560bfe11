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

import math
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

import structlog
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from greenops.clock import stamp
from greenops.dashboard import RecordData, dashboard_router
from greenops.models.workload import DEFAULT_TENANT
from greenops.reservations import QuotaExceeded, ReservationStore
from greenops.scheduler.algorithm import DecisionTimeout, Job, NoFeasibleWindow, Placement, run_now_mean
from greenops.scheduler.auth import require_token
from greenops.scheduler.booking import Ask, Outcome, book, replay
from greenops.scheduler.forecast_api import forecast_router
from greenops.scheduler.offload import SearchPool
from greenops.scheduler.ratelimit import TenantRateLimit
from greenops.scheduler.reservations_api import reservations_router
from greenops.scheduler.series import ceil_second, to_epoch
from greenops.scheduler.sources.base import CarbonSource, SourceUnavailable, UnknownZone

log = structlog.get_logger("greenops.scheduler")

MAX_HORIZON = timedelta(days=366)
# One request's search is jobs x zones x hours of horizon; past this it would hold the calendar's
# lock long enough to stall every other caller (10 000 jobs x 10 zones x 1 year took 84 s).
MAX_WORK = 2_000_000
Number = Annotated[float, Field(strict=True)]


# A Kubernetes label value, as tenants are on both paths
Name = Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")]


class SchedulingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    number_of_jobs: Annotated[int, Field(strict=True, ge=1, le=10000)] = 1
    eligible_regions: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(min_length=1, max_length=500)
    deadline: AwareDatetime
    duration: Annotated[float, Field(strict=True, gt=0, le=24 * 31, description="hours")]
    cpu: Annotated[float, Field(strict=True, gt=0, le=100000)]
    memory: Annotated[float, Field(strict=True, gt=0, le=1000000, description="GB")]
    req_timeout: Annotated[float, Field(strict=True, gt=0, le=300, description="seconds")] = 10
    origin_zone: str | None = Field(default=None, description="zone of the origin region, for the baseline")
    earliest_start: AwareDatetime | None = Field(
        default=None,
        description="no start before this instant: the caller's clock, e.g. when a workload that "
        "missed its window is placed again from the time its reconcile ran",
    )
    # Beyond the thesis contract: the reservation record (all optional, so thesis clients still work).
    key: Annotated[str, Field(min_length=1, max_length=512, pattern=r"^[\x21-\x7e]+$")] | None = Field(
        default=None,
        description="the placement's stable key (stack/workload, or namespace/name/uid): the same "
        "key with the same request is answered from the record and books nothing new; "
        "a changed request replaces the booking",
    )
    tenant: Name = Field(default=DEFAULT_TENANT, description="whose quota the booking counts against")
    path: Literal["pulumi", "cluster", "api"] = Field(default="api", description="where the placement came from")
    tenant_quota_vcpu: Annotated[float, Field(strict=True, gt=0)] | None = Field(
        default=None,
        description="the tenant's quota (from policy): active reservations of either path plus this "
        "one must stay within it",
    )
    regions: dict[str, Annotated[str, Field(pattern=r"^(azure|gcp|aws)/[a-z0-9-]+$")]] = Field(
        default_factory=dict, description="zone -> provider/region the caller maps it to, recorded with the booking"
    )
    dry_run: bool = Field(default=False, description="decide without booking (a dry-run admission)")
    workload: dict | None = Field(default=None, description="the workload as policy saw it, kept for re-evaluation")
    explanation: dict | None = Field(
        default=None,
        description="policy's account of the eligible set (its constraint chain, and what each zone "
        "maps back to), kept with the booking for `greenops explain`; not part of the spec",
    )

    @field_validator("eligible_regions")
    @classmethod
    def _dedupe(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))


class PlacementOut(BaseModel):
    scheduling_location: str
    scheduling_time: str
    expected_intensity: float = Field(description="mean gCO2eq/kWh over the run")


class Considered(PlacementOut):
    run_now_intensity: float = Field(description="mean gCO2eq/kWh of starting at once in this zone")


class SchedulingResponse(PlacementOut):
    key: str | None = Field(default=None, description="the reservation's key (none for a dry run)")
    baseline_intensity: float | None = Field(description="mean gCO2eq/kWh of the baseline run")
    baseline: str = Field(description="what the baseline is")
    saving_percent: float | None
    source: str
    placements: list[PlacementOut] = Field(description="every job of the batch, in placement order")
    searched_from: str | None = Field(
        default=None,
        description="where the search began (the later of now and earliest_start): the baseline run starts then",
    )
    considered: list[Considered] | None = Field(
        default=None,
        description="each eligible zone's best window with room, best first: the alternatives the "
        "(first) job's placement beat; absent from answers recorded before it was kept",
    )


class Health(BaseModel):
    status: str
    source: str
    zones: int


def _rfc3339(epoch: float) -> str:
    return stamp(ceil_second(epoch))


def _field_error(field: str, message: str, code: int = 422) -> JSONResponse:
    return JSONResponse(
        status_code=code,
        content={"detail": f"{field}: {message}", "errors": [{"loc": ["body", field], "msg": message}]},
    )


def create_app(
    source: CarbonSource,
    capacity_vcpu: float = 512.0,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    token: str | None = None,
    store: ReservationStore | None = None,
    rate_limit: str | None = None,
) -> FastAPI:
    """The service around one carbon source and one reservation record (in memory when none is
    given: tests and one-off runs)."""
    app = FastAPI(
        title="GreenOps scheduler",
        version="1.1.0",
        description="Carbon-aware geographic and temporal placement of delay-tolerant jobs.",
    )
    store = store or ReservationStore("sqlite://")
    app.state.store = store
    searches = SearchPool()
    app.router.on_shutdown.append(searches.close)
    app.state.source = source
    auth = [Depends(require_token(token))]
    limiter = TenantRateLimit(rate_limit) if rate_limit else None

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in errors)
        return JSONResponse(status_code=422, content={"detail": detail, "errors": errors})

    @app.get("/healthz", response_model=Health, summary="liveness")
    def healthz() -> Health:
        return Health(status="ok", source=source.describe(), zones=len(source.zones()))

    @app.get("/readyz", response_model=Health, summary="readiness: the carbon source has zones")
    def readyz():
        zones = source.zones()
        if not zones:
            return JSONResponse(status_code=503, content={"detail": "carbon source has no zones"})
        return Health(status="ready", source=source.describe(), zones=len(zones))

    def schedule(req: SchedulingRequest, key: str):
        started = time.monotonic()
        give_up_at = started + req.req_timeout
        if limiter and (refused := limiter.refuse(req.tenant)):
            return refused
        request = req.model_dump(mode="json", exclude={"key"})
        row = store.get(key)
        if not req.dry_run and (done := replay(row, request)):
            return _answer(done)
        now_dt = clock()
        now = to_epoch(now_dt)
        # Forecasts are issued now; the search starts at the caller's earliest start when later.
        begin_dt = max(now_dt, req.earliest_start) if req.earliest_start else now_dt
        begin = to_epoch(begin_dt)
        deadline = to_epoch(req.deadline)
        duration = req.duration * 3600
        if req.deadline <= begin_dt:
            return _field_error("deadline", f"{req.deadline.isoformat()} is in the past")
        if req.deadline - now_dt > MAX_HORIZON:
            return _field_error("deadline", f"more than {MAX_HORIZON.days} days ahead")
        if begin + duration > deadline:
            what = "now" if begin_dt == now_dt else f"the earliest start {_rfc3339(begin)}"
            return _field_error("duration", f"{req.duration:g} h does not fit between {what} and the deadline")
        horizon_hours = math.ceil((deadline - begin) / 3600)
        work = req.number_of_jobs * len(req.eligible_regions) * horizon_hours
        if work > MAX_WORK:
            return _field_error(
                "number_of_jobs",
                f"{req.number_of_jobs} jobs x {len(req.eligible_regions)} zones x "
                f"{horizon_hours} h of horizon is {work} slot evaluations, above "
                f"the limit of {MAX_WORK}: send fewer jobs or zones per request, or an earlier deadline",
            )
        known = source.zones()
        unknown = [z for z in req.eligible_regions if z not in known]
        if unknown:
            return _field_error("eligible_regions", f"unknown zone(s) {', '.join(unknown)}")
        if req.origin_zone is not None and req.origin_zone not in known:
            return _field_error("origin_zone", f"unknown zone {req.origin_zone}")
        try:
            forecasts = {z: source.series(z, begin, deadline, now) for z in req.eligible_regions}
            if time.monotonic() > give_up_at:
                raise DecisionTimeout("fetching forecasts took longer than req_timeout")
            if req.origin_zone:
                base_series = source.series(req.origin_zone, begin, begin + duration, now)
                baseline = run_now_mean(base_series, begin, duration)
                what = f"run now in {req.origin_zone}"
            else:
                baseline = sum(run_now_mean(s, begin, duration) for s in forecasts.values()) / len(forecasts)
                what = "run now, mean over the eligible zones"

            job = Job(req.cpu, req.memory, duration)
            weighed: list[Placement] = []  # what the latest search's first job weighed, for its answer

            def search(ledger):
                placements, weighed[:] = searches.place(
                    work, forecasts, job, req.number_of_jobs, begin, deadline, ledger, give_up_at
                )
                return placements

            def answer_of(placements):
                considered = [(p, run_now_mean(forecasts[p.zone], begin, duration)) for p in weighed]
                return _response(
                    placements, baseline, what, None if req.dry_run else key, source.describe(), begin, considered
                )

            ask = Ask(
                key=key,
                request=request,
                tenant=req.tenant,
                path=req.path,
                cpu=req.cpu,
                duration=duration,
                zones=req.eligible_regions,
                begin=begin,
                deadline=deadline,
                quota_vcpu=req.tenant_quota_vcpu,
                regions=req.regions,
                dry_run=req.dry_run,
            )
            done = book(store, ask, row, capacity_vcpu, now_dt, give_up_at, search, answer_of)
        except UnknownZone as exc:
            return _field_error("eligible_regions", str(exc))
        except NoFeasibleWindow as exc:
            return _field_error("eligible_regions", str(exc), code=409)
        except QuotaExceeded as exc:
            return _field_error("tenant", str(exc), code=409)
        except (SourceUnavailable, DecisionTimeout) as exc:
            log.warning("scheduling.unavailable", reason=str(exc))
            return JSONResponse(
                status_code=503,
                headers={"Retry-After": "5"},
                content={"detail": f"no decision: {exc}", "req_timeout": req.req_timeout},
            )
        log.info(
            "scheduling.placed",
            key=key,
            tenant=req.tenant,
            jobs=req.number_of_jobs,
            zones=len(forecasts),
            zone=done.answer["scheduling_location"],
            start=done.answer["scheduling_time"],
            expected=done.answer["expected_intensity"],
            baseline=done.answer["baseline_intensity"],
            dry_run=req.dry_run,
            elapsed_ms=round((time.monotonic() - started) * 1000, 2),
        )
        return _answer(done)

    responses = {
        409: {"description": "no capacity before the deadline, or the tenant's quota is used up"},
        422: {"description": "invalid request, naming the field"},
        503: {"description": "carbon source unavailable or req_timeout exceeded"},
        401: {"description": "a token is configured and the request lacks it"},
        429: {"description": "the tenant sent more requests than its rate limit; Retry-After says when"},
    }

    @app.post("/scheduling", response_model=SchedulingResponse, responses=responses, dependencies=auth)
    def post_scheduling(req: SchedulingRequest):
        """The thesis contract; with ``key`` it is idempotent, without one every call books anew."""
        return schedule(req, req.key or f"api/{uuid.uuid4()}")

    @app.put("/reservations/{key:path}", response_model=SchedulingResponse, responses=responses, dependencies=auth)
    def put_reservation(key: str, req: SchedulingRequest):
        """Book (or re-book with a changed request) the reservation ``key``."""
        if req.key is not None and req.key != key:
            return _field_error("key", f"{req.key} differs from the key in the path, {key}")
        return schedule(req, key)

    app.include_router(reservations_router(store, clock), dependencies=auth)
    app.include_router(forecast_router(source, clock), dependencies=auth)
    app.include_router(dashboard_router(RecordData(store, source, clock), clock), dependencies=auth)
    return app


def _response(
    placements: list[Placement],
    baseline: float,
    what: str,
    key: str | None,
    source: str,
    begin: float,
    considered: list[tuple[Placement, float]],
) -> dict:
    first = placements[0]
    mean_expected = sum(p.mean_intensity for p in placements) / len(placements)
    saving = 100 * (1 - mean_expected / baseline) if baseline > 0 else None
    return SchedulingResponse(
        key=key,
        scheduling_location=first.zone,
        scheduling_time=_rfc3339(first.start),
        expected_intensity=round(first.mean_intensity, 2),
        baseline_intensity=round(baseline, 2),
        baseline=what,
        saving_percent=None if saving is None else round(saving, 2),
        source=source,
        placements=[
            PlacementOut(
                scheduling_location=p.zone,
                scheduling_time=_rfc3339(p.start),
                expected_intensity=round(p.mean_intensity, 2),
            )
            for p in placements
        ],
        searched_from=_rfc3339(begin),
        considered=[
            Considered(
                scheduling_location=p.zone,
                scheduling_time=_rfc3339(p.start),
                expected_intensity=round(p.mean_intensity, 2),
                run_now_intensity=round(now, 2),
            )
            for p, now in considered
        ],
    ).model_dump(mode="json")


def _answer(done: Outcome) -> JSONResponse:
    # A replay is the very answer first given; the header only says nothing new was booked.
    return JSONResponse(done.answer, headers={"Idempotent-Replayed": "true"} if done.replayed else None)
