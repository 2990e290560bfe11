"""The GreenOps scheduler service: ``POST /scheduling`` behind the thesis contract.

Request:  {number_of_jobs, eligible_regions: [Electricity Maps zones], deadline (RFC 3339),
           duration (hours), cpu, memory, req_timeout (seconds)}, optionally origin_zone.
Response: {scheduling_location, scheduling_time} plus the expected mean intensity, the baseline
          (run now at origin_zone, else the mean of running now in each eligible zone), the
          saving, and every placement of a batch.
Bad input is a 422 naming the field; a full calendar a 409; a source that is down, or no
decision within req_timeout, a 503. Never a 5xx for what the caller sent.
"""
from __future__ import annotations

import math
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Annotated, Callable

import structlog
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from greenops.scheduler.algorithm import (
    CapacityLedger,
    DecisionTimeout,
    Job,
    NoFeasibleWindow,
    place_batch,
    run_now_mean,
)
from greenops.scheduler.auth import require_token
from greenops.scheduler.series import from_epoch, to_epoch
from greenops.scheduler.sources.base import CarbonSource, SourceUnavailable, UnknownZone

log = structlog.get_logger("greenops.scheduler")

MAX_HORIZON = timedelta(days=366)
# One request's search is jobs x zones x hours of horizon; past this it would hold the calendar's
# lock long enough to stall every other caller (10 000 jobs x 10 zones x 1 year took 84 s).
MAX_WORK = 2_000_000
Number = Annotated[float, Field(strict=True)]


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
        default=None, description="no start before this instant: the caller's clock, e.g. when a workload that "
                                  "missed its window is placed again from the time its reconcile ran")

    @field_validator("eligible_regions")
    @classmethod
    def _dedupe(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))


class PlacementOut(BaseModel):
    scheduling_location: str
    scheduling_time: str
    expected_intensity: float = Field(description="mean gCO2eq/kWh over the run")


class SchedulingResponse(PlacementOut):
    baseline_intensity: float | None = Field(description="mean gCO2eq/kWh of the baseline run")
    baseline: str = Field(description="what the baseline is")
    saving_percent: float | None
    source: str
    placements: list[PlacementOut] = Field(description="every job of the batch, in placement order")


class Health(BaseModel):
    status: str
    source: str
    zones: int


def _rfc3339(epoch: float) -> str:
    # Rounded up: a start a fraction of a second after `now` must not be reported before it.
    return from_epoch(math.ceil(epoch - 1e-6)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _field_error(field: str, message: str, code: int = 422) -> JSONResponse:
    return JSONResponse(status_code=code, content={"detail": f"{field}: {message}", "errors": [{"loc": ["body", field], "msg": message}]})


def create_app(
    source: CarbonSource,
    capacity_vcpu: float = 512.0,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    token: str | None = None,
) -> FastAPI:
    """The service around one carbon source and one capacity ledger (shared by all requests)."""
    app = FastAPI(title="GreenOps scheduler", version="1.0.0",
                  description="Carbon-aware geographic and temporal placement of delay-tolerant jobs.")
    ledger = CapacityLedger(capacity_vcpu)
    lock = threading.Lock()
    app.state.ledger = ledger
    app.state.source = source

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

    @app.post("/scheduling", response_model=SchedulingResponse,
              responses={409: {"description": "no capacity before the deadline"},
                         422: {"description": "invalid request, naming the field"},
                         503: {"description": "carbon source unavailable or req_timeout exceeded"},
                         401: {"description": "a token is configured and the request lacks it"}},
              dependencies=[Depends(require_token(token))])
    def schedule(req: SchedulingRequest):
        started = time.monotonic()
        give_up_at = started + req.req_timeout
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
            return _field_error("number_of_jobs", f"{req.number_of_jobs} jobs x {len(req.eligible_regions)} zones x "
                                f"{horizon_hours} h of horizon is {work} slot evaluations, above "
                                f"the limit of {MAX_WORK}: send fewer jobs or zones per request, or an earlier deadline")
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
            with lock:
                ledger.forget_before(now)
                placements = place_batch(forecasts, Job(req.cpu, req.memory, duration), req.number_of_jobs,
                                         begin, deadline, ledger, give_up_at)
            if req.origin_zone:
                base_series = source.series(req.origin_zone, begin, begin + duration, now)
                baseline = run_now_mean(base_series, begin, duration)
                what = f"run now in {req.origin_zone}"
            else:
                baseline = sum(run_now_mean(s, begin, duration) for s in forecasts.values()) / len(forecasts)
                what = "run now, mean over the eligible zones"
        except UnknownZone as exc:
            return _field_error("eligible_regions", str(exc))
        except NoFeasibleWindow as exc:
            return _field_error("eligible_regions", str(exc), code=409)
        except (SourceUnavailable, DecisionTimeout) as exc:
            log.warning("scheduling.unavailable", reason=str(exc))
            return JSONResponse(status_code=503, headers={"Retry-After": "5"},
                                content={"detail": f"no decision: {exc}", "req_timeout": req.req_timeout})
        first = placements[0]
        mean_expected = sum(p.mean_intensity for p in placements) / len(placements)
        saving = 100 * (1 - mean_expected / baseline) if baseline > 0 else None
        log.info("scheduling.placed", jobs=req.number_of_jobs, zones=len(forecasts), zone=first.zone,
                 start=_rfc3339(first.start), expected=round(first.mean_intensity, 1), baseline=round(baseline, 1),
                 elapsed_ms=round((time.monotonic() - started) * 1000, 2))
        return SchedulingResponse(
            scheduling_location=first.zone,
            scheduling_time=_rfc3339(first.start),
            expected_intensity=round(first.mean_intensity, 2),
            baseline_intensity=round(baseline, 2),
            baseline=what,
            saving_percent=None if saving is None else round(saving, 2),
            source=source.describe(),
            placements=[PlacementOut(scheduling_location=p.zone, scheduling_time=_rfc3339(p.start),
                                     expected_intensity=round(p.mean_intensity, 2)) for p in placements],
        )

    return app
