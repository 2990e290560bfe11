"""``POST /scheduling`` and ``PUT /reservations/{key}``: decide where and when, and book it.

The decision's collaborators (carbon source, reservation record, clock, capacity, rate limit,
search pool) come from the app's state through FastAPI dependencies (greenops.scheduler.state),
so a test can replace any one of them, the clock above all, with ``app.dependency_overrides``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from greenops.common.clock import Clock, stamp
from greenops.identity import Forbidden, Principal
from greenops.intensity.base import Bands, CarbonSource, SourceUnavailable, UnknownZone
from greenops.intensity.series import ceil_second, to_epoch
from greenops.models.workload import DEFAULT_TENANT
from greenops.policies.config import PolicySettings
from greenops.reservations import QuotaExceeded, ReservationStore
from greenops.scheduler.auth import Writer
from greenops.scheduler.booking import Ask, Outcome, book, replay
from greenops.scheduler.contract import Considered, PlacementOut, SchedulingRequest, SchedulingResponse
from greenops.scheduler.metrics import SchedulerMetrics, Tally, result_of
from greenops.scheduler.ratelimit import PrincipalRateLimit
from greenops.scheduler.state import ClockDep, SourceDep, StateDep, StoreDep
from greenops.search.algorithm import (
    TRACK_DAYS,
    CapacityLedger,
    DecisionTimeout,
    Job,
    NoFeasibleWindow,
    Placement,
    Rule,
    run_now_mean,
)
from greenops.search.algorithm import search as search_by_rule
from greenops.search.offload import SMALL_WORK, SearchPool
from greenops.search.track import track_record

log = structlog.get_logger("greenops.scheduler")

MAX_HORIZON = timedelta(days=366)
# One request's search is jobs x zones x hours of horizon; past this it would hold the calendar's
# lock long enough to stall every other caller (10 000 jobs x 10 zones x 1 year took 84 s).
MAX_WORK = 2_000_000

RESPONSES: dict[int | str, dict[str, Any]] = {
    409: {"description": "no capacity before the deadline, or the tenant's quota is used up"},
    422: {"description": "invalid request, naming the field"},
    503: {"description": "carbon source unavailable or req_timeout exceeded"},
    401: {"description": "no credential, or one the scheduler does not accept"},
    403: {"description": "the body names a tenant, path or quota, or the key a reservation, the caller does not own"},
    413: {"description": "the body is larger than the scheduler accepts"},
    429: {"description": "the caller sent more requests than its rate limit; Retry-After says when"},
}


@functools.lru_cache(maxsize=4096)
def _rfc3339(epoch: float) -> str:
    # an answer writes some twenty instants, most of them the same hours as the answers before it
    # (each zone's best window starts on a data point)
    return stamp(ceil_second(epoch))


def _field_error(field: str, message: str, code: int = 422) -> JSONResponse:
    return JSONResponse(
        status_code=code,
        content={"detail": f"{field}: {message}", "errors": [{"loc": ["body", field], "msg": message}]},
    )


@dataclass(frozen=True)
class Decider:
    """What one decision uses, gathered per request from the injected dependencies."""

    source: CarbonSource
    store: ReservationStore
    clock: Clock
    capacity_vcpu: float
    rate_limit: PrincipalRateLimit | None
    searches: SearchPool
    policy: PolicySettings
    metrics: SchedulerMetrics

    def schedule(self, req: SchedulingRequest, key: str, principal: Principal) -> JSONResponse:
        """Decide and book, counting the request's result by path and tenant."""
        tally = Tally.of(principal)
        try:
            response = self._schedule(req, key, principal, tally)
        except Forbidden:
            tally.result = "refused"
            self.metrics.booked(tally)
            raise
        replayed = "idempotent-replayed" in response.headers
        tally.result = tally.result or result_of(response.status_code, replayed, req.dry_run)
        self.metrics.booked(tally)
        return response

    def _schedule(self, req: SchedulingRequest, key: str, principal: Principal, tally: Tally) -> JSONResponse:
        started = time.monotonic()
        give_up_at = started + req.req_timeout
        if self.rate_limit and (refused := self.rate_limit.refuse(principal.bucket, principal.name)):
            return refused
        # Whose booking it is comes from the principal, never from the body: the body may only pick
        # among the tenants and paths the principal already has (Forbidden, 403, otherwise).
        tally.tenant = tenant = principal.tenant_for(req.tenant, DEFAULT_TENANT)
        tally.path = path = principal.path_for(req.path)
        quota = self._quota(tenant, req.tenant_quota_vcpu)
        # the default rule stays out of the request as stored, so bookings made before the field
        # existed still replay (their spec hash has no rule in it)
        request = req.model_dump(mode="json", exclude={"key"} | ({"rule"} if req.rule == "point" else set()))
        request.update(tenant=tenant, path=path)
        row = self.store.get(key)
        if row is not None:
            principal.may_change(row)
        if not req.dry_run and (done := replay(row, request)):
            return _answer(done)
        now_dt = self.clock()
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
        replays = TRACK_DAYS * len(req.eligible_regions) * horizon_hours
        if req.rule == "sure" and replays > MAX_WORK:
            return _field_error(
                "rule",
                f"sure replays the search on {TRACK_DAYS} earlier days: {replays} slot evaluations, above the "
                f"limit of {MAX_WORK}; use point or interval, or send fewer zones or an earlier deadline",
            )
        known = self.source.zones()
        unknown = [z for z in req.eligible_regions if z not in known]
        if unknown:
            return _field_error("eligible_regions", f"unknown zone(s) {', '.join(unknown)}")
        if req.origin_zone is not None and req.origin_zone not in known:
            return _field_error("origin_zone", f"unknown zone {req.origin_zone}")
        try:
            forecasts = {z: self.source.series(z, begin, deadline, now) for z in req.eligible_regions}
            if time.monotonic() > give_up_at:
                raise DecisionTimeout("fetching forecasts took longer than req_timeout")
            # each eligible zone's run-now mean, for the baseline and the answer's windows weighed
            run_now: dict[str, float] = {}

            def run_now_in(zone: str) -> float:
                if zone not in run_now:
                    run_now[zone] = run_now_mean(forecasts[zone], begin, duration)
                return run_now[zone]

            if req.origin_zone:
                base_series = self.source.series(req.origin_zone, begin, begin + duration, now)
                baseline = run_now_mean(base_series, begin, duration)
                what = f"run now in {req.origin_zone}"
            else:
                baseline = sum(run_now_in(z) for z in forecasts) / len(forecasts)
                what = "run now, mean over the eligible zones"

            job = Job(req.cpu, req.memory, duration)
            weighed: list[Placement] = []  # what the latest search's first job weighed, for its answer
            bands: dict[str, Bands | None] | None = None
            track = None
            if req.rule == "interval":
                bands = {z: self.source.bands(z, begin, deadline, now) for z in req.eligible_regions}
            elif req.rule == "sure":
                track = track_record(
                    self.source, req.eligible_regions, job, begin, deadline, now, req.origin_zone, give_up_at=give_up_at
                )
            if time.monotonic() > give_up_at:
                raise DecisionTimeout("weighing the forecast's uncertainty took longer than req_timeout")

            def search(ledger: CapacityLedger) -> list[Placement]:
                if req.rule == "point":
                    placements, weighed[:] = self.searches.place(
                        work, forecasts, job, req.number_of_jobs, begin, deadline, ledger, give_up_at
                    )
                else:
                    # the worker pool runs the point search only; a rule's search runs in this thread
                    placements, weighed[:] = search_by_rule(
                        forecasts,
                        job,
                        req.number_of_jobs,
                        begin,
                        deadline,
                        ledger,
                        give_up_at,
                        req.rule,
                        bands,
                        req.origin_zone,
                        track,
                    )
                return placements

            def answer_of(placements: list[Placement]) -> dict[str, Any]:
                considered = [(p, run_now_in(p.zone)) for p in weighed]
                return _response(
                    placements,
                    baseline,
                    what,
                    None if req.dry_run else key,
                    self.source.describe(),
                    begin,
                    considered,
                    req.rule,
                )

            ask = Ask(
                key=key,
                request=request,
                tenant=tenant,
                path=path,
                cpu=req.cpu,
                duration=duration,
                zones=req.eligible_regions,
                begin=begin,
                deadline=deadline,
                quota_vcpu=quota,
                regions=req.regions,
                dry_run=req.dry_run,
            )
            # The calendar's read, the commit and any retry share one pooled connection when the
            # search between them is small (it runs here, in a millisecond or so); a large one runs
            # for seconds, and would keep that connection out of the pool meanwhile.
            with self.store.held() if work <= SMALL_WORK else contextlib.nullcontext():
                done = book(
                    self.store,
                    ask,
                    row,
                    self.capacity_vcpu,
                    now_dt,
                    give_up_at,
                    search,
                    answer_of,
                    authorize=principal.may_change,
                    retried=self.metrics.retries.labels("commit").inc,
                )
        except UnknownZone as exc:
            return _field_error("eligible_regions", str(exc))
        except NoFeasibleWindow as exc:
            return _field_error("eligible_regions", str(exc), code=409)
        except QuotaExceeded as exc:
            tally.result = "refused"  # a 409 like a full calendar, but policy's refusal, not a conflict
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
            tenant=tenant,
            principal=principal.name,
            jobs=req.number_of_jobs,
            zones=len(forecasts),
            zone=done.answer["scheduling_location"],
            start=done.answer["scheduling_time"],
            expected=done.answer["expected_intensity"],
            baseline=done.answer["baseline_intensity"],
            dry_run=req.dry_run,
            elapsed_ms=round((time.monotonic() - started) * 1000, 2),
        )
        if not done.replayed and not req.dry_run:
            self.metrics.placed(path, req.cpu, req.memory, req.duration, done.answer, req.regions)
        return _answer(done)

    def _quota(self, tenant: str, asked: float | None) -> float | None:
        """The tenant's quota is policy's (the settings the bundle ships), never the body's. A body
        may repeat it, or ask for less; one that asks for more is refused by name."""
        cap = self.policy.cap(tenant)
        if asked is None:
            return cap
        if cap is not None and asked > cap:
            raise Forbidden(
                f"tenant_quota_vcpu: {asked:g} is above tenant {tenant}'s quota of {cap:g} vCPU; "
                "the quota is policy's, the scheduler does not take it from the request"
            )
        return asked


async def get_decider(state: StateDep, source: SourceDep, store: StoreDep, clock: ClockDep) -> Decider:
    return Decider(
        source, store, clock, state.capacity_vcpu, state.rate_limit, state.searches, state.policy, state.metrics
    )


DeciderDep = Annotated[Decider, Depends(get_decider)]

router = APIRouter()


@router.post("/scheduling", response_model=SchedulingResponse, responses=RESPONSES)
def post_scheduling(req: SchedulingRequest, decider: DeciderDep, principal: Writer) -> JSONResponse:
    """The thesis contract; with ``key`` it is idempotent, without one every call books anew."""
    return decider.schedule(req, req.key or f"api/{uuid.uuid4()}", principal)


@router.put("/reservations/{key:path}", response_model=SchedulingResponse, responses=RESPONSES)
def put_reservation(key: str, req: SchedulingRequest, decider: DeciderDep, principal: Writer) -> JSONResponse:
    """Book (or re-book with a changed request) the reservation ``key``."""
    if req.key is not None and req.key != key:
        return _field_error("key", f"{req.key} differs from the key in the path, {key}")
    return decider.schedule(req, key, principal)


def _response(
    placements: list[Placement],
    baseline: float,
    what: str,
    key: str | None,
    source: str,
    begin: float,
    considered: list[tuple[Placement, float]],
    rule: Rule = "point",
) -> dict[str, Any]:
    first = placements[0]
    mean_expected = sum(p.mean_intensity for p in placements) / len(placements)
    saving = 100 * (1 - mean_expected / baseline) if baseline > 0 else None
    return SchedulingResponse(
        key=key,
        **_placed(first),
        baseline_intensity=round(baseline, 2),
        baseline=what,
        saving_percent=None if saving is None else round(saving, 2),
        source=source,
        placements=[PlacementOut(**_placed(p)) for p in placements],
        searched_from=_rfc3339(begin),
        rule=rule,
        considered=[Considered(**_placed(p), run_now_intensity=round(now, 2)) for p, now in considered],
    ).model_dump(mode="json")


def _placed(p: Placement) -> dict[str, Any]:
    """A placement as every answer writes one (PlacementOut's fields)."""
    return {
        "scheduling_location": p.zone,
        "scheduling_time": _rfc3339(p.start),
        "expected_intensity": round(p.mean_intensity, 2),
    }


def _answer(done: Outcome) -> JSONResponse:
    # A replay is the very answer first given; the header only says nothing new was booked.
    return JSONResponse(done.answer, headers={"Idempotent-Replayed": "true"} if done.replayed else None)
