"""One decision of the scheduler service, in the order it is made: who asks and whether it is a
retry; whether the request can be answered (its window, its size, its zones); the forecasts it is
weighed on; the search and the booking; the answer. Each step that refuses returns the error the
caller gets, naming the field (422, 409), or raises what becomes a 503.

The decision's collaborators (carbon source, reservation record, clock, capacity, rate limit,
search pool) come from the app's state through FastAPI dependencies (greenops.scheduler.state),
so a test can replace any one of them, the clock above all, with ``app.dependency_overrides``.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from greenops.common.clock import Clock
from greenops.common.errors import field_errors
from greenops.identity import Forbidden, Principal
from greenops.intensity.base import Bands, CarbonSource, SourceUnavailable, UnknownZone
from greenops.intensity.series import Series, to_epoch
from greenops.models.workload import DEFAULT_TENANT
from greenops.policies.settings import PolicySettings
from greenops.reservations import PENDING, Conflict, Queued, QueueFull, QuotaExceeded, ReservationStore, Seen
from greenops.reservations.store import HELD_PATH
from greenops.reservations.tables import stored_utc
from greenops.scheduler import preemption, queueing, tenant_rules
from greenops.scheduler.answer import answered, field_error, response, rfc3339
from greenops.scheduler.booking import Ask, Outcome, book, replay, spec_hash
from greenops.scheduler.contract import SchedulingRequest
from greenops.scheduler.metrics import SchedulerMetrics, Tally, result_of
from greenops.scheduler.outlook import RecordedOutlook
from greenops.scheduler.ratelimit import PrincipalRateLimit
from greenops.search.algorithm import (
    TRACK_DAYS,
    Assignment,
    CapacityLedger,
    DecisionTimeout,
    Job,
    NoFeasibleWindow,
    run_now_mean,
)
from greenops.search.algorithm import search as search_by_rule
from greenops.search.offload import SMALL_WORK, SearchPool
from greenops.search.track import track_record

if TYPE_CHECKING:
    from greenops.scheduler.state import SchedulerState

log = structlog.get_logger("greenops.scheduler")

MAX_HORIZON = timedelta(days=366)
# One request's search is jobs x zones x hours of horizon; past this it would hold the calendar's
# lock long enough to stall every other caller (10 000 jobs x 10 zones x 1 year took 84 s).
MAX_WORK = 2_000_000
# How stale a replica's copy of the declared outages may be when it books (one read per interval).
OUTAGE_MAX_AGE = 5.0


@dataclass(frozen=True)
class Window:
    """When a request's search runs, in epoch seconds: forecasts are issued ``now``; the search
    begins at the later of now and the caller's earliest start, and ends at the deadline."""

    now_dt: datetime
    now: float
    begin_dt: datetime
    begin: float
    deadline: float
    duration: float  # one job's run, seconds
    work: int  # jobs x zones x hours of horizon: what the search costs


@dataclass
class Forecasts:
    """What the search weighs: each eligible zone's series, the baseline it is compared with, and
    what the request's rule adds (the bands of ``interval``, the track record of ``sure``)."""

    series: dict[str, Series]
    begin: float
    duration: float
    baseline: float = 0.0
    baseline_is: str = ""
    bands: dict[str, Bands | None] | None = None
    track: np.ndarray | None = None
    _run_now: dict[str, float] = field(default_factory=dict)

    def run_now_in(self, zone: str) -> float:
        """The zone's mean over a run started at once: the baseline's part, and each window weighed."""
        if zone not in self._run_now:
            self._run_now[zone] = run_now_mean(self.series[zone], self.begin, self.duration)
        return self._run_now[zone]


def _ask(
    req: SchedulingRequest,
    window: Window,
    key: str,
    request: dict[str, Any],
    tenant: str,
    path: str,
    quota: float | None,
    priority: int | None,
    admitted: bool = False,
) -> Ask:
    """The request as the record books it, in its window."""
    return Ask(
        key=key,
        request=request,
        tenant=tenant,
        path=path,
        cpu=req.cpu,
        duration=window.duration,
        zones=req.eligible_regions,
        begin=window.begin,
        deadline=window.deadline,
        quota_vcpu=quota,
        regions=req.regions,
        dry_run=req.dry_run and not admitted,
        priority=priority,
        admitted=admitted,
    )


def _in_outage(row: dict[str, Any] | None, out: dict[str, dict[str, Any]]) -> bool:
    """The booking ``row`` is in a region declared unavailable: a retry of it is booked anew."""
    return row is not None and f"{row.get('provider')}/{row.get('region')}" in out


def _outside(req: SchedulingRequest, out: dict[str, dict[str, Any]]) -> SchedulingRequest | JSONResponse:
    """``req`` searched only in zones outside the declared outages (a zone maps to its region by the
    request's ``regions``), or the 409 naming the outages when it leaves no zone."""
    if not out:
        return req
    kept = [z for z in req.eligible_regions if req.regions.get(z) not in out]
    if len(kept) == len(req.eligible_regions):
        return req
    if not kept:
        named = sorted({req.regions[z] for z in req.eligible_regions})
        said = "; ".join(
            f"{r} since {out[r]['declared_at'].isoformat(timespec='seconds')}: {out[r]['reason']}" for r in named
        )
        return field_error(
            "eligible_regions", f"every eligible zone is in a region declared unavailable ({said})", code=409
        )
    return req.model_copy(update={"eligible_regions": kept})


class _NotWaiting(Exception):
    """The request being admitted is no longer the Pending revision the admitter read."""


class KeyInUse(Exception):
    """A booking that must be new (an admission CREATE's) met a reservation under its key (409)."""


Authorize = Callable[[dict[str, Any]], None]  # raises to refuse replacing the row it is given


def _authorizer(principal: Principal, key: str, request: dict[str, Any], new_key: bool) -> Authorize:
    """What judges each version of the key's row the booking could replace (the first read, and every
    read after a conflict): the principal must own it, and a new key's booking replaces nothing but
    its own replay. A review that reuses another object's request uid (the key's last segment) so
    cannot rebook that object's reservation."""

    def authorize(row: dict[str, Any]) -> None:
        principal.may_change(row)
        if new_key and not replay(row, request):
            raise KeyInUse(
                f"reservation {key} exists: a booking of a new key (an admission CREATE) never changes a "
                "reservation already made under it"
            )

    return authorize


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
    price: RecordedOutlook | None = None  # the scarcity price (point rule), when switched on
    queue: queueing.QueueSettings = field(default_factory=queueing.QueueSettings)

    @classmethod
    def of(
        cls,
        state: SchedulerState,
        source: CarbonSource | None = None,
        store: ReservationStore | None = None,
        clock: Clock | None = None,
    ) -> Decider:
        """The decider of the app's collaborators; a route passes the source, store and clock its
        dependencies gave it (which a test may override), the queue's admitter none."""
        return cls(
            source or state.source,
            store or state.store,
            clock or state.clock,
            state.capacity_vcpu,
            state.rate_limit,
            state.searches,
            state.policy,
            state.metrics,
            state.price,
            state.queue,
        )

    def schedule(self, req: SchedulingRequest, key: str, principal: Principal) -> JSONResponse:
        """Decide and book, counting the request's result by path and tenant."""
        tally = Tally.of(principal)
        try:
            response = self._schedule(req, key, principal, tally)
        except Forbidden:
            tally.result = "refused"
            self.metrics.booked(tally)
            raise
        except KeyInUse as exc:
            tally.result = "conflict"
            response = field_error("key", str(exc), code=409)
        replayed = "idempotent-replayed" in response.headers
        tally.result = tally.result or result_of(response.status_code, replayed, req.dry_run)
        self.metrics.booked(tally)
        return response

    def _schedule(self, req: SchedulingRequest, key: str, principal: Principal, tally: Tally) -> JSONResponse:
        started = time.monotonic()
        give_up_at = started + req.req_timeout
        # Whose booking it is comes from the principal, never from the body: the body may only pick
        # among the tenants and paths the principal already has (Forbidden, 403, otherwise).
        tally.tenant = tenant = principal.tenant_for(req.tenant, DEFAULT_TENANT)
        tally.path = path = principal.path_for(req.path)
        if self.rate_limit and (refused := self.rate_limit.refuse(principal.bucket_for(tenant, path), principal.name)):
            return refused
        quota = self._quota(tenant, req.tenant_quota_vcpu)
        tenant_rules.check(self.policy.rules(tenant), tenant, req)
        klass = self._priority(tenant, req.priority_class)
        if isinstance(klass, JSONResponse):
            return klass
        # the default rule and class stay out of the request as stored, so bookings made before the
        # fields existed still replay (their spec hash has neither in it)
        left_out = {"key", "new_key"} | ({"rule"} if req.rule == "point" else set())
        left_out |= {"priority_class"} if req.priority_class is None else set()
        request = req.model_dump(mode="json", exclude=left_out)
        request.update(tenant=tenant, path=path)
        authorize = _authorizer(principal, key, request, req.new_key)
        # the key is the tenant's own: another tenant's booking of it is not this one's to see,
        # replace or be refused over (a Pulumi-path key is predictable: anyone could book it first)
        row = self.store.get(tenant, key)
        if row is not None:
            authorize(row)
        out = self._outages()
        if not req.dry_run and (done := replay(row, request)) and not _in_outage(row, out):
            return answered(done)
        if (
            not req.dry_run
            and row is not None
            and row["phase"] == PENDING
            and row["spec_hash"] == spec_hash(request)
            and queueing.can_still_run(row, self.clock())
        ):
            # a retry of a request that waits: its place is kept (one whose run no longer fits before
            # its deadline is answered as a fresh request would be, not told to go on waiting)
            return queueing.still_waiting(self.store, row, self.clock())
        outside = _outside(req, out)
        if isinstance(outside, JSONResponse):
            return outside
        req = outside
        window = self._window(req)
        if isinstance(window, JSONResponse):
            return window
        ask = _ask(req, window, key, request, tenant, path, quota, klass[1])
        try:
            forecasts = self._forecast(req, window, give_up_at)
            try:
                done = self._search_and_book(req, ask, row, authorize, window, forecasts, give_up_at)
            except NoFeasibleWindow as no_room:
                if self.policy.preemption == "off":
                    raise
                who = preemption.Preemptor(
                    klass, req.eligible_regions, req.deadline, timedelta(minutes=self.policy.preemption_notice_minutes)
                )
                done = self._search_and_book(req, ask, row, authorize, window, forecasts, give_up_at, (who, no_room))
        except (NoFeasibleWindow, QuotaExceeded) as exc:
            if req.queue and self._could_fit(req, ask, window, forecasts, give_up_at):
                return self._enqueue(req, ask, authorize, window, str(exc), klass)
            return self._refusal(exc, req, tally)
        except (UnknownZone, SourceUnavailable, DecisionTimeout) as exc:
            return self._refusal(exc, req, tally)
        log.info(
            "scheduling.placed",
            key=key,
            tenant=tenant,
            principal=principal.name,
            jobs=req.number_of_jobs,
            zones=len(forecasts.series),
            zone=done.answer["scheduling_location"],
            start=done.answer["scheduling_time"],
            expected=done.answer["expected_intensity"],
            baseline=done.answer["baseline_intensity"],
            dry_run=req.dry_run,
            elapsed_ms=round((time.monotonic() - started) * 1000, 2),
        )
        if not done.replayed and not req.dry_run:
            self.metrics.placed(path, req.cpu, req.memory, req.duration, done.answer, req.regions)
        return answered(done)

    def _window(self, req: SchedulingRequest) -> Window | JSONResponse:
        """The request's window, or the 422 naming the field that makes it unanswerable: a deadline
        past or too far, a run that does not fit, a search too large, a zone the source lacks."""
        now_dt = self.clock()
        # Forecasts are issued now; the search starts at the caller's earliest start when later.
        begin_dt = max(now_dt, req.earliest_start) if req.earliest_start else now_dt
        begin = to_epoch(begin_dt)
        deadline = to_epoch(req.deadline)
        duration = req.duration * 3600
        if req.deadline <= begin_dt:
            return field_error("deadline", f"{req.deadline.isoformat()} is in the past")
        if req.deadline - now_dt > MAX_HORIZON:
            return field_error("deadline", f"more than {MAX_HORIZON.days} days ahead")
        if begin + duration > deadline:
            what = "now" if begin_dt == now_dt else f"the earliest start {rfc3339(begin)}"
            return field_error("duration", f"{req.duration:g} h does not fit between {what} and the deadline")
        horizon_hours = math.ceil((deadline - begin) / 3600)
        work = req.number_of_jobs * len(req.eligible_regions) * horizon_hours
        if work > MAX_WORK:
            return field_error(
                "number_of_jobs",
                f"{req.number_of_jobs} jobs x {len(req.eligible_regions)} zones x "
                f"{horizon_hours} h of horizon is {work} slot evaluations, above "
                f"the limit of {MAX_WORK}: send fewer jobs or zones per request, or an earlier deadline",
            )
        replays = TRACK_DAYS * len(req.eligible_regions) * horizon_hours
        if req.rule == "sure" and replays > MAX_WORK:
            return field_error(
                "rule",
                f"sure replays the search on {TRACK_DAYS} earlier days: {replays} slot evaluations, above the "
                f"limit of {MAX_WORK}; use point or interval, or send fewer zones or an earlier deadline",
            )
        known = self.source.zones()
        unknown = [z for z in req.eligible_regions if z not in known]
        if unknown:
            return field_error("eligible_regions", f"unknown zone(s) {', '.join(unknown)}")
        if req.origin_zone is not None and req.origin_zone not in known:
            return field_error("origin_zone", f"unknown zone {req.origin_zone}")
        return Window(now_dt, to_epoch(now_dt), begin_dt, begin, deadline, duration, work)

    def _forecast(self, req: SchedulingRequest, window: Window, give_up_at: float) -> Forecasts:
        """Each eligible zone's forecast, the baseline, and what the rule weighs besides; within
        ``req_timeout`` (DecisionTimeout otherwise)."""
        begin, deadline, now, duration = window.begin, window.deadline, window.now, window.duration
        forecasts = Forecasts(
            {z: self.source.series(z, begin, deadline, now) for z in req.eligible_regions}, begin, duration
        )
        if time.monotonic() > give_up_at:
            raise DecisionTimeout("fetching forecasts took longer than req_timeout")
        if req.origin_zone:
            base_series = self.source.series(req.origin_zone, begin, begin + duration, now)
            forecasts.baseline = run_now_mean(base_series, begin, duration)
            forecasts.baseline_is = f"run now in {req.origin_zone}"
        else:
            zones = forecasts.series
            forecasts.baseline = sum(forecasts.run_now_in(z) for z in zones) / len(zones)
            forecasts.baseline_is = "run now, mean over the eligible zones"
        if req.rule == "interval":
            forecasts.bands = {z: self.source.bands(z, begin, deadline, now) for z in req.eligible_regions}
        elif req.rule == "sure":
            job = Job(req.cpu, req.memory, duration)
            forecasts.track = track_record(
                self.source, req.eligible_regions, job, begin, deadline, now, req.origin_zone, give_up_at=give_up_at
            )
        if time.monotonic() > give_up_at:
            raise DecisionTimeout("weighing the forecast's uncertainty took longer than req_timeout")
        return forecasts

    def _search_and_book(
        self,
        req: SchedulingRequest,
        ask: Ask,
        row: dict[str, Any] | None,
        authorize: Authorize,
        window: Window,
        forecasts: Forecasts,
        give_up_at: float,
        preempting: tuple[preemption.Preemptor, NoFeasibleWindow] | None = None,
    ) -> Outcome:
        """Search the calendar and book the result; the record runs the search again if another
        booking took the slot first (greenops.scheduler.booking). ``preempting``: who may take the
        hours of lower classes' bookings (greenops.scheduler.preemption), and why it must."""
        job = Job(req.cpu, req.memory, window.duration)
        weighed: list[Assignment] = []  # what the latest search's first job weighed, for its answer
        weighed_on: list[tuple[CapacityLedger, list[dict[str, Any]]]] = []  # the latest search's calendar, candidates
        taken_now: list[dict[str, Any]] = []  # the bookings the latest commit took the hours of

        price = self.price.at(window.now_dt) if self.price is not None and req.rule == "point" else None

        def search(ledger: CapacityLedger) -> list[Assignment]:
            if preempting is not None:
                who, no_room = preempting
                rows = [
                    r
                    for r in preemption.candidates(self.store, who, window.now_dt)
                    if (r["tenant"], r["key"]) != (ask.tenant, ask.key)  # its own booking is not in the calendar
                ]
                if not rows:
                    raise no_room
                weighed_on[:] = [(ledger, rows)]
                ledger = preemption.without(ledger, rows)
            return searched(ledger)

        def preempted(placements: list[Assignment]) -> list[tuple[Queued, Seen]]:
            if preempting is None:
                return []
            (ledger, rows), who = weighed_on[0], preempting[0]
            names = {v: k for k, v in sorted(self.policy.priority_classes.items(), reverse=True)}
            taken_now[:] = preemption.taken(ledger, placements, req.cpu, window.duration, rows)
            return [preemption.requeued(row, names, who, window.now_dt) for row in taken_now]

        def searched(ledger: CapacityLedger) -> list[Assignment]:
            if req.rule == "point":
                placements, weighed[:] = self.searches.place(
                    window.work,
                    forecasts.series,
                    job,
                    req.number_of_jobs,
                    ask.begin,
                    ask.deadline,
                    ledger,
                    give_up_at,
                    price,
                )
            else:
                # the worker pool runs the point search only; a rule's search runs in this thread
                placements, weighed[:] = search_by_rule(
                    forecasts.series,
                    job,
                    req.number_of_jobs,
                    ask.begin,
                    ask.deadline,
                    ledger,
                    give_up_at,
                    req.rule,
                    forecasts.bands,
                    req.origin_zone,
                    forecasts.track,
                )
            return placements

        def answer_of(placements: list[Assignment]) -> dict[str, Any]:
            considered = [(p, forecasts.run_now_in(p.zone)) for p in weighed]
            return response(
                placements,
                forecasts.baseline,
                forecasts.baseline_is,
                None if req.dry_run else ask.key,
                self.source.describe(),
                ask.begin,
                considered,
                req.rule,
                self._preemptible(ask),
            )

        # The calendar's read, the commit and any retry share one pooled connection when the
        # search between them is small (it runs here, in a millisecond or so); a large one runs
        # for seconds, and would keep that connection out of the pool meanwhile.
        with self.store.held() if window.work <= SMALL_WORK else contextlib.nullcontext():
            done = book(
                self.store,
                ask,
                row,
                self.capacity_vcpu,
                window.now_dt,
                give_up_at,
                search,
                answer_of,
                authorize=authorize,
                retried=self.metrics.retries.labels("commit").inc,
                preempted=preempted,
            )
        if preempting is not None and not done.replayed and not req.dry_run:
            for row in taken_now:
                log.info("scheduling.preempted", key=row["key"], tenant=row["tenant"], by_class=preempting[0].klass[0])
                self.metrics.preempted.labels(row["path"]).inc()
        return done

    def _preemptible(self, ask: Ask) -> bool:
        """Whether a request of a higher class may take this booking's hours (greenops.scheduler.preemption)."""
        return (
            self.policy.preemption == "waiting"
            and ask.path != HELD_PATH
            and ask.priority is not None
            and ask.priority < max(self.policy.priority_classes.values())
        )

    def _priority(self, tenant: str, asked: str | None) -> tuple[str, int] | JSONResponse:
        """The request's priority class and its value (greenops.policies.settings.priority_of)."""
        if asked is not None and asked not in self.policy.priority_classes:
            return field_error("priority_class", f"{asked} is not one of {sorted(self.policy.priority_classes)}")
        try:
            return self.policy.priority_of(tenant, asked)
        except ValueError as exc:
            raise Forbidden(f"priority_class: {exc}") from None

    def _could_fit(
        self, req: SchedulingRequest, ask: Ask, window: Window, forecasts: Forecasts, give_up_at: float
    ) -> bool:
        """Whether the request could be placed before its deadline once every other booking is gone:
        within its quota, and with a window on an empty calendar. Only such a request may wait."""
        if ask.quota_vcpu is not None and req.cpu * req.number_of_jobs > ask.quota_vcpu:
            return False
        job = Job(req.cpu, req.memory, window.duration)
        empty = CapacityLedger(self.capacity_vcpu)
        try:
            search_by_rule(forecasts.series, job, req.number_of_jobs, ask.begin, ask.deadline, empty, give_up_at)
        except (NoFeasibleWindow, DecisionTimeout):
            return False
        return True

    def _enqueue(
        self,
        req: SchedulingRequest,
        ask: Ask,
        authorize: Authorize,
        window: Window,
        reason: str,
        klass: tuple[str, int],
    ) -> JSONResponse:
        """Record the request as Pending (202 with its place in the queue), or the 409 of a full queue."""
        for _ in range(3):
            row = self.store.get(ask.tenant, ask.key)
            if row is not None:
                authorize(row)
                if done := replay(row, ask.request):
                    return answered(done)  # booked meanwhile by a retry that overtook this request
            pending = queueing.Waiting(ask, reason, klass, window.begin, spec_hash(ask.request))
            if req.dry_run:
                return pending.response(None, None)
            try:
                queued = pending.queued(self.queue.max_per_tenant)
                stored = self.store.enqueue(queued, self.store.seen(row), window.now_dt)
            except QueueFull as exc:
                return field_error("queue", str(exc), code=409)
            except Conflict:
                continue
            log.info("scheduling.queued", key=ask.key, tenant=ask.tenant, priority_class=klass[0], reason=reason)
            return queueing.still_waiting(self.store, {**stored, "key": ask.key}, window.now_dt)
        return JSONResponse(
            status_code=503,
            headers={"Retry-After": "5"},
            content={"detail": "no decision: the key kept changing while the request was queued"},
        )

    def admit(self, row: dict[str, Any]) -> str:
        """Place one waiting request of the queue, from the later of now and its earliest start
        (greenops.scheduler.queueing): LEFT when it left the queue (placed, or Failed because its run
        no longer fits before its deadline or a rule set since refuses it), else why it stayed. The
        booking replaces only the Pending revision read here: a request another replica admitted, or
        its owner changed or released meanwhile, is left as it is."""
        tenant, path, key, revision = row["tenant"], row["path"], row["key"], row["revision"]
        now_dt = self.clock()
        waited = (now_dt - stored_utc(row["queued_at"])).total_seconds()

        def still_pending(current: dict[str, Any]) -> None:
            if current["phase"] != PENDING or current["revision"] != revision:
                raise _NotWaiting

        def leave(outcome: str, why: str) -> str:
            try:
                self.store.report(tenant, key, "Failed", why, now_dt, authorize=still_pending)
            except _NotWaiting:
                return queueing.STAYED
            log.info("queue.left", key=key, tenant=tenant, outcome=outcome, reason=why)
            self.metrics.left_queue(path, outcome, waited)
            return queueing.LEFT

        try:
            req = SchedulingRequest.model_validate(row["request"])
        except ValidationError as exc:
            problems = "; ".join(f"{loc}: {msg}" for loc, msg in field_errors(exc.errors()))
            return leave("refused", f"its recorded request is no longer one the scheduler takes: {problems}")
        window = self._window(req)
        if isinstance(window, JSONResponse):
            return leave(
                "expired",
                f"waited in the queue from {stored_utc(row['queued_at']).isoformat(timespec='seconds')} "
                f"({row['reason']}); no room freed in time: {json.loads(bytes(window.body))['detail']}",
            )
        try:
            quota = self._quota(tenant, req.tenant_quota_vcpu)
            tenant_rules.check(self.policy.rules(tenant), tenant, req)
        except Forbidden as exc:
            return leave("refused", f"refused while it waited in the queue: {exc}")
        outside = _outside(req, self._outages())
        if isinstance(outside, JSONResponse):
            return queueing.NO_ROOM  # every zone of it is in a declared outage: it keeps its place
        req = outside
        ask = _ask(req, window, key, row["request"], tenant, path, quota, row["priority"], admitted=True)
        give_up_at = time.monotonic() + req.req_timeout
        try:
            forecasts = self._forecast(req, window, give_up_at)
            done = self._search_and_book(req, ask, row, still_pending, window, forecasts, give_up_at)
        except NoFeasibleWindow:
            return queueing.NO_ROOM  # it keeps its place
        except QuotaExceeded:
            return queueing.NO_QUOTA
        except _NotWaiting:
            return queueing.STAYED  # another replica admitted it, or its owner changed or released it
        except (UnknownZone, SourceUnavailable, DecisionTimeout) as exc:
            log.warning("queue.admission_failed", key=key, tenant=tenant, reason=str(exc))
            return queueing.STAYED
        if done.replayed:
            return queueing.STAYED
        log.info("queue.left", key=key, tenant=tenant, outcome="admitted", waited_seconds=round(waited, 3))
        self.metrics.left_queue(path, "admitted", waited)
        self.metrics.placed(path, req.cpu, req.memory, req.duration, done.answer, req.regions)
        return queueing.LEFT

    def _outages(self) -> dict[str, dict[str, Any]]:
        """The declared outages by ``provider/region``, as read at most OUTAGE_MAX_AGE ago."""
        return {f"{o['provider']}/{o['region']}": o for o in self.store.outages(max_age=OUTAGE_MAX_AGE)}

    def _refusal(self, exc: Exception, req: SchedulingRequest, tally: Tally) -> JSONResponse:
        """What the caller gets when the decision cannot be made or booked."""
        if isinstance(exc, UnknownZone):
            return field_error("eligible_regions", str(exc))
        if isinstance(exc, NoFeasibleWindow):
            return field_error("eligible_regions", str(exc), code=409)
        if isinstance(exc, QuotaExceeded):
            tally.result = "refused"  # a 409 like a full calendar, but policy's refusal, not a conflict
            return field_error("tenant", str(exc), code=409)
        log.warning("scheduling.unavailable", reason=str(exc))  # the source is down, or time ran out
        return JSONResponse(
            status_code=503,
            headers={"Retry-After": "5"},
            content={"detail": f"no decision: {exc}", "req_timeout": req.req_timeout},
        )

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
