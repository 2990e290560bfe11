"""Placement: a Pulumi dynamic provider that decides where and when one generic workload runs, and
renders the provider-specific VM objects while it is due (the objects are applied by the workload's
ConfigGroup, named ``<name>-vm``).

This was once ``GreenVm``; ``greenops.provider.greenvm`` still resolves the old
names, because each stack's state records the provider by import path (see that module).

create:  OPA's decision -> the scheduler -> zone mapped back to region and size -> image; the
         lifecycle starts as Scheduled and the manifests stay empty until the time gate opens.
diff:    replace when the workload spec changes; update when the recorded lifecycle would move
         (gate opens, the operator reports the VM ready or failed, the run has had its full
         duration, a missed window), when the objects would change (an object held back until the
         cluster reported what it needs, such as ACK's Instance waiting for its security group's id)
         or when settings change; otherwise nothing, and no scheduler call.
update:  advances the recorded lifecycle (greenops.placing.lifecycle); a missed window with room
         before the deadline is placed again (policy and scheduler, from now).
delete:  releases the scheduler's reservation.

Direct mode (``provisioning: direct``): the program declares the VM itself, through the cloud's
Pulumi provider, from the placement's record and the pass's instant (greenops.direct.records), and
hands the Placement that verdict. The Placement takes the same step at the same instant, with the
VM counted as running once declared (Pulumi's create returns when the cloud reports it running),
and refuses a verdict reached from a record other than its own. A decision made in this pass (a
first placement, or a missed window placed again) is declared on the next pass: its gate may open
now, but the VM waits for the record (Provisioning, with the next change due at once).

Each placement is a reservation in the scheduler's record, keyed ``stack/workload/spec-digest``:
a create retried after a failure books nothing twice, a replacement (a new spec) books under a new
key before the old one is released, and a re-placement re-books the same key. Every phase the
lifecycle reaches is reported to the record (Completed and Failed give the capacity back); a
report that cannot be made is tried again on the next pass, as ``reservation.phase`` lags.

This module is imported by the dynamic-provider process (``python -m pulumi.dynamic``), so the
provider holds no clients or clocks in its state: the clock is ``GREENOPS_NOW`` (RFC 3339) when
set, else the system clock.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)
from pydantic import ValidationError

from greenops.catalog import load_catalog
from greenops.common import endpoints
from greenops.common.clock import parse_time, stamp, system_clock
from greenops.common.endpoints import OPA_TOKEN_VARIABLE
from greenops.common.errors import GreenOpsError, field_errors
from greenops.direct.records import observation, pass_instant
from greenops.models import Decision, Provisioning, Workload, spec_digest
from greenops.models.duration import format_duration
from greenops.models.workload import DEFAULT_TENANT
from greenops.observability import spans
from greenops.placing import SchedulerClient, place
from greenops.placing.failover import (
    DEFAULT_MAX_FAILOVERS,
    Failover,
    Outages,
    avoided,
    outage_reason,
    priced,
    region_of,
)
from greenops.placing.lifecycle import (
    MAX_EVENTS,
    Lifecycle,
    Observation,
    Phase,
    Reported,
    Step,
    Voice,
    Window,
    advance,
    fail_over,
    from_outputs,
    next_change,
)
from greenops.placing.planner import IN_PLACE, PlacementError, Waiting, resize_in_place
from greenops.placing.scheduler_client import SchedulerRefused
from greenops.policies.client import OpaClient
from greenops.provider import heartbeat
from greenops.provider.heartbeat import mark_stack_seen
from greenops.provider.traced import traced
from greenops.renderers import Rendered, RenderSettings, render_set
from greenops.renderers.user_data import report_script


class NotPlaced(GreenOpsError):
    """A workload the pass could not place; ``final`` when policy or the scheduler refused it (not
    when one of them could not be asked)."""

    def __init__(self, message: str, final: bool):
        super().__init__(message)
        self.final = final


# Counts the re-applies after edits by hand (greenops.placing.observe.drift_of) on each object.
RESTORED_ANNOTATION = "greenops.io/restored"
# The declared outages, read once per interval for every placement this process serves.
OUTAGES = Outages()
# Credentials for OPA, the scheduler and the cluster: kept as secrets in the state.
# A workload waiting in the scheduler's queue (greenops.scheduler.queueing): not a lifecycle phase
# (nothing is decided yet), the Placement's own until the queue admits it; each pass asks again, and
# one is due this long after the last so that a reconciler asks soon after room frees.
PENDING = "Pending"
QUEUE_POLL = timedelta(seconds=60)
SECRET_INPUTS = ["opaToken", "schedulerToken", "kubeconfig", "runSecrets"]
SETTINGS_KEYS = (
    "stack",
    "opaUrl",
    "schedulerUrl",
    "timeoutSeconds",
    "attempts",
    "render",
    "opaToken",
    "schedulerToken",
    "leadSeconds",
    "watchOperators",
    "kubeconfig",
    "kubeContext",
    "caCertificate",
    "provisioning",
    "maxFailovers",
    "drift",
)
# What a workload that has not been declared in this pass is seen as by the lifecycle (direct mode).
NOT_DECLARED = Observation(ready=False, detail="the VM is declared on the next pass, from this placement's record")
# How direct mode words its reasons: no operator objects and no operator; the VM is the cloud's.
DIRECT_DECLARED = Voice(
    gate_opened="gate opened: the VM is declared in this pass",
    waiting="waiting for the VM",
    ready="the VM exists since {since}, when a pass created it (Pulumi's create returns once the cloud reports it "
    "running)",
)
DIRECT_NOT_DECLARED = replace(
    DIRECT_DECLARED, gate_opened="gate opened: the VM is declared on the next pass, from this placement's record"
)


def _workload(props: dict[str, Any], now: datetime, check_deadline: bool = True) -> Workload:
    return Workload.model_validate(props["workload"], context={"now": now, "check_deadline": check_deadline})


def _lead(props: dict[str, Any]) -> timedelta:
    return timedelta(seconds=float(props.get("leadSeconds") or 0))


def reservation_key(props: dict[str, Any]) -> str:
    return f"{props.get('stack') or 'stack'}/{_name(props)}/{spec_digest(props['workload'])}"


def _release_reason(scheduler: SchedulerClient, props: dict[str, Any], key: str) -> str:
    """Why a deleted Placement gives its booking back: a replacement (its workload's spec changed;
    Pulumi creates the new Placement, under its new key, before it deletes the old) or a removal."""
    name, stack = _name(props), props.get("stack")
    try:
        newer = [
            r["key"] for r in scheduler.active(f"{stack or 'stack'}/{name}/", tenant=_tenant(props)) if r["key"] != key
        ]
    except GreenOpsError:  # the release itself says whether the scheduler can be reached
        newer = []
    if newer:
        return f"workload {name} replaced in stack {stack}: its spec changed, and its new placement is {newer[0]}"
    return f"workload {name} removed from stack {stack}"


def _tenant(props: dict[str, Any]) -> str:
    """The tenant the placement booked under (the workload's, as the planner sends it): its
    reservation is that tenant's key."""
    return str((props.get("workload") or {}).get("tenant") or DEFAULT_TENANT)


def _direct(props: dict[str, Any]) -> bool:
    return props.get("provisioning") == Provisioning.DIRECT.value


def _mode(props: dict[str, Any]) -> str:
    return str(props.get("provisioning") or Provisioning.OPERATOR.value)


def _name(props: dict[str, Any]) -> str:
    w = props.get("workload") or {}
    return str(w.get("name", "?")) if isinstance(w, dict) else "?"


def _about(props: dict[str, Any]) -> dict[str, str]:
    """A provider operation's span attributes: which workload of which stack (no credential)."""
    return {spans.WORKLOAD: _name(props), spans.STACK: str(props.get("stack") or "")}


class PlacementProvider(ResourceProvider):
    # The pickled provider holds no secret (it is a reference to this class, ~100 bytes), so it need
    # not be stored encrypted: with the SDK's default every resource's copy is a secret, which
    # every checkpoint of the state encrypts again.
    serialize_as_secret_always = False

    def __init__(self, clock: Callable[[], datetime] | None = None, outages: Outages | None = None):
        super().__init__()
        # Only direct tests inject a clock (or a copy of the outages that is never stale); the
        # engine path uses system_clock (GREENOPS_NOW) and this process's copy.
        self._clock = clock
        self._outages = outages

    def now(self) -> datetime:
        return (self._clock or system_clock)()

    def pass_now(self, props: dict[str, Any]) -> datetime:
        """The instant this pass is judged at: in direct mode the program's, which its verdict on the
        VM was reached at, so that both take the same step; otherwise the clock's."""
        return pass_instant(props["direct"]) if _direct(props) else self.now()

    # -- check --------------------------------------------------------------------------------
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        name = _name(news)
        # An unchanged, already placed workload is not re-checked against its deadline.
        placed_before = bool(_olds) and _olds.get("workload") == news.get("workload")
        try:
            _workload(news, self.now(), check_deadline=not placed_before)
        except ValidationError as exc:
            for loc, msg in field_errors(exc.errors()):
                failures.append(CheckFailure(f"workload.{loc}" if loc else "workload", f"workload {name!r}: {msg}"))
        try:
            RenderSettings.model_validate(news.get("render") or {})
        except ValidationError as exc:
            for loc, msg in field_errors(exc.errors()):
                failures.append(CheckFailure(f"render.{loc}", f"workload {name!r}: {msg}"))
        for key in ("opaUrl", "schedulerUrl"):
            if not str(news.get(key, "")).startswith(("http://", "https://")):
                failures.append(CheckFailure(key, f"workload {name!r}: {key} must be an http(s) URL"))
        return CheckResult(news, failures)

    # -- create -------------------------------------------------------------------------------
    @traced("create", _about)
    def create(self, props: dict[str, Any]) -> CreateResult:
        now = self.pass_now(props)
        if _direct(props) and props["direct"].get("declared"):
            # A VM declared for a placement that does not exist: its record outlived it.
            raise GreenOpsError(
                f"workload {_name(props)!r}: this pass declared its VM from a record in the stack's outputs, "
                "but the state has no placement of it (removed from the state?): nothing was changed; run "
                "`greenops up` once, which reads the record from the state itself"
            )
        workload = _workload(props, now)
        return CreateResult(
            # the id prefix predates the rename to Placement; kept so new and existing ids look alike
            id_=f"greenvm-{workload.name}",
            outs=self._first_placement(props, workload, now),
        )

    def _first_placement(
        self, props: dict[str, Any], workload: Workload, now: datetime, queued: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The outputs of a first decision: placed (Scheduled, and on through its gate when due), or
        waiting in the scheduler's queue (Pending: each later pass asks again, until it is admitted).
        ``queued``: the lifecycle of the pass before, while it waited (its placement goes on from
        the lifecycle it had before it waited, if any)."""
        try:
            decision = self._place(props, workload, now)
        except Waiting as waiting:
            return _waiting_outputs(props, waiting, now, queued=queued)
        where = f"{decision.provider}/{decision.region} from {_stamp(decision)}"
        entered = next((e for e in (queued or {}).get("events") or [] if e.get("phase") == PENDING), None)
        said = (
            f"placed from the queue, where it waited from {entered['at']} ({entered['reason']}): {where}"
            if entered
            else f"placed: {where}"
        )
        before = (queued or {}).get("earlier")
        lifecycle = Lifecycle.placed(now, said, earlier=Lifecycle.from_document(before) if before else None)
        step, reported = self._advance(props, workload, decision, lifecycle, now, manifests=[], just_placed=True)
        props = self._with_report(props, step.lifecycle)
        recorded = self._report(props, step.lifecycle, Phase.SCHEDULED.value)
        return self._outputs(props, workload, decision, step.lifecycle, recorded, reported)

    # -- diff / update ------------------------------------------------------------------------
    @traced("diff", _about)
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        self._seen(news)
        if olds.get("workload") != news.get("workload"):
            if _resizable(olds, news):
                return DiffResult(changes=True, replaces=[])  # the same VM, resized (update: _resized)
            return DiffResult(changes=True, replaces=["workload"], delete_before_replace=False)
        if olds.get("phase") == PENDING:
            return DiffResult(changes=True, replaces=[])  # every pass asks whether the queue admitted it
        if olds.get("phase") == Phase.FAILED.value and not olds.get("decision"):
            return DiffResult(changes=False)  # it left the queue unplaced: Failed stays, as a placed one's does
        if not olds.get("decision"):
            return DiffResult(changes=True, replaces=["workload"])
        settings_changed = any(olds.get(k) != news.get(k) for k in SETTINGS_KEYS)
        news = _carried(olds, news)
        now, workload, decision, before, step, reported = self._this_pass(olds, news)
        moved = (
            step.replace is not None
            or step.lifecycle != before
            or olds.get("phase") != before.phase.value
            or _recorded(olds) != step.lifecycle.phase.value
            or _materialised(news, workload, decision, step.lifecycle, reported).objects
            != (olds.get("manifests") or [])
        )
        return DiffResult(changes=settings_changed or moved, replaces=[], stables=[] if step.replace else ["decision"])

    @traced("update", _about)
    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if olds.get("phase") == PENDING:
            now = self.pass_now(news)
            try:
                workload = _workload(news, now, check_deadline=False)
                return UpdateResult(outs=self._first_placement(news, workload, now, olds.get("lifecycle")))
            except NotPlaced as exc:
                if not exc.final:
                    raise  # the scheduler or OPA did not answer: the next pass asks again
                return UpdateResult(outs=self._left_queue(olds, news, str(exc), now))
        if olds.get("workload") != news.get("workload"):
            return UpdateResult(outs=self._resized(olds, _carried(olds, news)))
        news = _carried(olds, news)
        now, workload, decision, before, step, reported = self._this_pass(olds, news)
        if step.replace:
            # The window passed with nothing provisioned, or this attempt failed over, and the
            # deadline still leaves room: a new policy and scheduler call, from now; the old
            # decision is kept in the events (and a failover's in the lifecycle's failovers).
            failover = _failover(step, before, decision, now)
            try:
                placed_now = self._place(news, workload, now, _avoid(before, failover))
            except NotPlaced as exc:
                if failover is None or not exc.final:
                    raise  # a missed window keeps failing the pass; a dependency down is asked again
                return UpdateResult(outs=self._no_room(olds, news, workload, decision, before, failover, exc, now))
            except Waiting as waiting:
                if failover is None and not step.preempted:
                    raise
                # the attempt given up counts while it waits (its carbon is priced once it is placed: unknown yet)
                gave_up = before.model_copy(update={"failovers": (*before.failovers, failover)}) if failover else before
                return UpdateResult(outs=_waiting_outputs(news, waiting, now, gave_up))
            failover = failover and priced(failover, workload, decision, placed_now)
            decision = placed_now
            done = "failed over" if failover else "re-placed"
            placed = Lifecycle.placed(
                now,
                f"{done}: {step.replace}; now {decision.provider}/{decision.region} from {_stamp(decision)}",
                earlier=before,
                failover=failover,
            )
            news = {**news, "report": None} if "report" in news else news  # a new decision, a new token
            step, reported = self._advance(news, workload, decision, placed, now, manifests=[], just_placed=True)
            news = self._with_report(news, step.lifecycle)
            recorded = self._report(news, step.lifecycle, Phase.SCHEDULED.value)
        else:
            news = self._with_report(news, step.lifecycle)
            recorded = self._report(news, step.lifecycle, _recorded(olds))
        return UpdateResult(
            outs=self._outputs(news, workload, decision, step.lifecycle, recorded, reported, olds.get("held") or [])
        )

    def _this_pass(
        self, olds: dict[str, Any], news: dict[str, Any]
    ) -> tuple[datetime, Workload, Decision, Lifecycle, Step, Mapping[str, Mapping[str, Any]]]:
        """What diff and update both start from: the recorded lifecycle, and where this pass takes it."""
        now = self.pass_now(news)
        workload = _workload(news, now, check_deadline=False)
        decision = Decision.from_document(olds["decision"])
        before = from_outputs(olds, _window(news, workload, decision))
        if _mode(olds) != _mode(news) and _vm_may_exist(olds, before):
            raise GreenOpsError(
                f"workload {workload.name!r} is {before.phase.value}: its provisioning cannot change from "
                f"{_mode(olds)} to {_mode(news)} until the run ends (a new VM would start the run again); "
                "change it back, or wait until the run has completed"
            )
        if _direct(news) and news["direct"].get("basis") != olds.get("lifecycle"):
            # No basis is right only for a placement that was not direct before (its record was not read).
            if news["direct"].get("basis") is not None or _direct(olds):
                raise GreenOpsError(_stale(news, olds.get("lifecycle")))
        step, reported = self._advance(
            news, workload, decision, before, now, olds.get("manifests") or [], olds.get("resolved")
        )
        step = self._preempted_step(news, decision, before, self._outage_step(news, decision, before, step, now))
        return now, workload, decision, before, step, reported

    def _preempted_step(self, props: dict[str, Any], decision: Decision, before: Lifecycle, step: Step) -> Step:
        """``step``, unless its gate opens now, its decision is preemptible, and the record no longer holds
        its hours (a request of a higher class took them: greenops.scheduler.preemption): placed again,
        which finds it waiting in the queue, or placed elsewhere by it. When the record cannot say,
        the gate waits for the next pass: a VM is never brought up on hours that may be gone."""
        if not decision.preemptible or step.replace:
            return step  # booked where preemption is off, or for a class nothing is above
        if before.phase is not Phase.SCHEDULED or step.lifecycle.phase is Phase.SCHEDULED:
            return step
        key = reservation_key(props)
        try:
            with self._scheduler(props) as scheduler:
                held = scheduler.reservation(key, tenant=_tenant(props))
        except GreenOpsError as exc:
            pulumi.log.warn(f"workload {_name(props)!r}: its gate waits: the reservation {key} was not read ({exc})")
            return Step(before)
        start = parse_time(str(held["start"])) if held.get("start") else None
        booked = start is not None and abs((start - decision.scheduling_time).total_seconds()) < 1
        if held.get("phase") == Phase.SCHEDULED.value and booked and held.get("zone") == decision.zone:
            return step
        if held.get("phase") not in (PENDING, Phase.SCHEDULED.value):
            return step  # ended or moved on by its own report: this pass's step says what happened
        why = held.get("reason") or f"the record books it at {held.get('zone')} from {held.get('start')}"
        return Step(before, replace=f"its booking changed in the record: {why}", preempted=True)

    def _outage_step(
        self, props: dict[str, Any], decision: Decision, before: Lifecycle, step: Step, now: datetime
    ) -> Step:
        """``step``, unless an admin declared the placement's region unavailable: then it fails over
        (greenops.placing.failover). When the scheduler cannot say, the pass goes on as placed."""
        window = _window(props, _workload(props, now, check_deadline=False), decision)
        if step.replace is not None or step.lifecycle.phase.terminal or window.failover_cap == 0:
            return step
        try:
            declared = (
                (self._outages or OUTAGES)
                .of(str(props["schedulerUrl"]), self._scheduler(props, heartbeat.TIMEOUT_SECONDS, 1).outages)
                .get(region_of(decision))
            )
        except GreenOpsError as exc:
            pulumi.log.warn(
                f"workload {_name(props)!r}: the declared outages were not read ({exc}); nothing fails over"
            )
            return step
        return step if declared is None else fail_over(before, window, now, outage_reason(declared))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # Refresh keeps the record: what happened is not re-derived from the clock.
        return ReadResult(id_, props)

    @traced("delete", _about)
    def delete(self, _id: str, props: dict[str, Any]) -> None:
        # The VM belongs to the workload's ConfigGroup (operator mode) or its direct set, which delete
        # it (before this, as they depend on the Placement); the booking is
        # ours. If the scheduler cannot be reached the delete fails, and the next run releases it.
        key = (props.get("reservation") or {}).get("key") or reservation_key(props)
        with self._scheduler(props) as scheduler:
            try:
                scheduler.release(key, _release_reason(scheduler, props, key), tenant=_tenant(props))
            except GreenOpsError as exc:
                raise GreenOpsError(
                    f"workload {_name(props)!r}: its reservation {key} was not released: {exc}"
                ) from None

    def _resized(self, olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
        """A Provisioning or Running workload whose size changed, resized in place: the same VM on the
        same provider, region and zone, with the new size; its run keeps its start and the hours
        already run, and the rest is booked under the new spec's key before the old booking is
        released, saying so. When it cannot be done in place, nothing changes and the pass says why."""
        now = self.pass_now(news)
        workload, was = _workload(news, now, check_deadline=False), _workload(olds, now, check_deadline=False)
        decision = Decision.from_document(olds["decision"])
        before = advance(from_outputs(olds, _window(olds, was, decision)), _window(olds, was, decision), now)
        lc = before.lifecycle
        ran = (now - lc.running_since) if lc.running_since else timedelta(0)
        left = workload.duration - ran
        what = _size_change(was, workload)
        if not lc.phase.materialised or left <= timedelta(0):
            raise GreenOpsError(
                f"workload {workload.name!r} is {lc.phase.value} after {format_duration(ran)} of its run: {what} "
                "was not applied (nothing changed); change it back, or remove and declare it again"
            )
        key, old_key = reservation_key(news), (olds.get("reservation") or {}).get("key") or reservation_key(olds)
        opa, scheduler = self._opa(news), self._scheduler(news)
        try:
            resized = resize_in_place(workload, opa, scheduler, decision, key, now, left.total_seconds() / 3600)
        except GreenOpsError as exc:
            raise GreenOpsError(
                f"workload {workload.name!r}: {what} was not applied (nothing changed): {exc}"
            ) from None
        finally:
            opa.close()
        if isinstance(resized, str):
            scheduler.close()
            raise GreenOpsError(
                f"workload {workload.name!r} is {lc.phase.value} on {decision.provider}/{decision.region}: {what} "
                f"cannot be made in place ({resized}); nothing changed: change it back, or wait until its run ends"
            )
        kept = f"{format_duration(ran)} of {format_duration(workload.duration)} run kept"
        reason = (
            f"resized in place: {what}; the VM is stopped, resized to {resized.vm_size} and started again on "
            f"{decision.provider}/{decision.region}, {kept}"
        )
        with scheduler:
            scheduler.release(old_key, f"{reason}; it continues as {key}"[:1024], tenant=_tenant(news))
        lifecycle = lc.to(lc.phase, now, reason)
        recorded = self._report(news, lifecycle, Phase.SCHEDULED.value)
        step, reported = self._advance(
            news, workload, resized, lifecycle, now, olds.get("manifests") or [], olds.get("resolved")
        )
        return self._outputs(news, workload, resized, step.lifecycle, recorded, reported, olds.get("held") or [])

    def _no_room(
        self,
        olds: dict[str, Any],
        news: dict[str, Any],
        workload: Workload,
        decision: Decision,
        before: Lifecycle,
        failover: Failover,
        exc: NotPlaced,
        now: datetime,
    ) -> dict[str, Any]:
        """A failover that found nowhere to go: Failed with both reasons, and its booking given back."""
        failed = before.model_copy(update={"failovers": (*before.failovers, failover)}).to(
            Phase.FAILED, now, f"{failover.reason}; no room elsewhere: {exc}", failed_at=now
        )
        recorded = self._report(news, failed, _recorded(olds))
        return self._outputs(news, workload, decision, failed, recorded, {}, olds.get("held") or [])

    def _left_queue(self, olds: dict[str, Any], news: dict[str, Any], why: str, now: datetime) -> dict[str, Any]:
        """A waiting workload that can no longer be placed (its deadline passed while it waited, or
        policy now refuses it): Failed, with the reason, and its queued request withdrawn so that
        the queue never places what the stack has given up on. Nothing was decided, nothing runs."""
        key = reservation_key(news)
        reason = f"left the scheduler's queue unplaced: {why}"
        with self._scheduler(news) as scheduler:
            scheduler.release(key, reason[:1024], tenant=_tenant(news))
        events = [
            *((olds.get("lifecycle") or {}).get("events") or []),
            {"at": stamp(now), "phase": "Failed", "reason": reason},
        ]
        return {
            **news,
            "decision": None,
            "phase": Phase.FAILED.value,
            "lifecycle": {"phase": Phase.FAILED.value, "reason": reason, "events": events},
            "nextChangeAt": None,
            "manifests": [],
            "resolved": {},
            "held": [],
            "reservation": {"key": key, "phase": Phase.FAILED.value},
        }

    # -- the pieces ---------------------------------------------------------------------------
    def _seen(self, props: dict[str, Any]) -> None:
        """This pass runs over the placement's stack: the record's orphan sweep leaves it alone."""
        mark_stack_seen(props, _tenant(props), lambda: self._scheduler(props, heartbeat.TIMEOUT_SECONDS, 1))

    def _place(
        self, props: dict[str, Any], workload: Workload, now: datetime, avoid: frozenset[str] = frozenset()
    ) -> Decision:
        opa, scheduler = self._opa(props), self._scheduler(props)
        try:
            return place(workload, opa, scheduler, earliest_start=now, key=reservation_key(props), avoid=avoid)
        except GreenOpsError as exc:
            final = isinstance(exc, (PlacementError, SchedulerRefused))
            raise NotPlaced(f"workload {workload.name!r} was not placed: {exc}", final=final) from None
        finally:
            opa.close()
            scheduler.close()

    @staticmethod
    def _opa(props: dict[str, Any]) -> OpaClient:
        return OpaClient(
            props["opaUrl"],
            timeout=float(props.get("timeoutSeconds") or endpoints.TIMEOUT_SECONDS),
            attempts=int(props.get("attempts") or endpoints.ATTEMPTS),
            token=props.get("opaToken") or os.environ.get(OPA_TOKEN_VARIABLE),
            ca_certificate=props.get("caCertificate"),
        )

    @staticmethod
    def _scheduler(props: dict[str, Any], timeout: float | None = None, attempts: int | None = None) -> SchedulerClient:
        return SchedulerClient(
            props["schedulerUrl"],
            timeout=timeout or float(props.get("timeoutSeconds") or endpoints.TIMEOUT_SECONDS),
            attempts=attempts or int(props.get("attempts") or endpoints.ATTEMPTS),
            # the stack's credential, else the ambient one (a CI step's secret, `greenops serve`'s
            # export, a pod's projected ServiceAccount token), like KUBECONFIG; never in the state
            token=props.get("schedulerToken") or endpoints.ambient_scheduler_token(),
            ca_certificate=props.get("caCertificate"),
            wait_budget=endpoints.RATE_LIMIT_WAIT_SECONDS,
        )

    def _with_report(self, props: dict[str, Any], lifecycle: Lifecycle) -> dict[str, Any]:
        """``props`` with the run's report script (greenops.renderers.user_data.report_script), got
        when its objects first exist: a completion token for its reservation, kept in the state
        (a secret output) and rendered into the VM's user-data."""
        if not props.get("completionUrl") or props.get("report") or not lifecycle.phase.materialised:
            return props
        key = reservation_key(props)
        with self._scheduler(props) as scheduler:
            token = scheduler.completion_token(key, tenant=_tenant(props))
        url = f"{str(props['completionUrl']).rstrip('/')}/reservations/{quote(key, safe='/')}/completion"
        return {**props, "report": report_script(url, token)}

    def _report(self, props: dict[str, Any], lifecycle: Lifecycle, recorded: str | None) -> str | None:
        """Tell the record the lifecycle's phase when it differs from what the record has; return
        what the record now has. Failing to tell it is logged, and retried on the next pass."""
        if recorded == lifecycle.phase.value:
            return recorded
        key = reservation_key(props)
        try:
            with self._scheduler(props) as scheduler:
                answer = scheduler.report(key, lifecycle.phase.value, lifecycle.reason, tenant=_tenant(props))
                phase: str | None = answer["phase"]
                return phase
        except GreenOpsError as exc:
            pulumi.log.warn(
                f"workload {_name(props)!r}: the reservation {key} still says {recorded}, "
                f"not {lifecycle.phase.value}: {exc}; the next pass tells it again"
            )
            return recorded

    def _advance(
        self,
        props: dict[str, Any],
        workload: Workload,
        decision: Decision,
        lifecycle: Lifecycle,
        now: datetime,
        manifests: list[dict[str, Any]],
        resolved: Mapping[str, Mapping[str, Any]] | None = None,
        just_placed: bool = False,
    ) -> tuple[Step, Mapping[str, Mapping[str, Any]]]:
        """The lifecycle after this pass, and what is known of the objects' statuses: what was
        ``resolved`` before (recorded in the state), updated by what the cluster reports now."""
        window = _window(props, workload, decision)
        if props.get("report") and lifecycle.phase.materialised:  # its run may have reported its end
            with self._scheduler(props) as scheduler:
                done = scheduler.completion(reservation_key(props), tenant=_tenant(props))
                window = replace(window, reported=Reported.of(done))
        if just_placed and window.start < now:
            # The scheduler's clock may run a little behind ours: a start it just chose is never "missed".
            window = replace(window, start=now)
        if _direct(props):
            return _direct_step(props, workload, lifecycle, window, now, just_placed), {}
        declared = props.get("objectsDeclared") is not False  # (absent: a program from before it was told)
        if not declared and lifecycle.phase.materialised:
            raise GreenOpsError(
                f"workload {workload.name!r} is {lifecycle.phase.value}: its objects exist, but this pass did not "
                "declare them (the program read an older row of it); nothing was changed: run the pass again"
            )
        step, known = _operator_step(props, workload, decision, lifecycle, window, now, manifests, resolved)
        if not declared and step.replace is None and step.lifecycle.phase.materialised:
            # The gate is due, but this pass declared no objects for it (greenops.placing.declared):
            # it opens on the next pass, which is due at once (the next change is the gate).
            return Step(lifecycle), dict(resolved or {})
        return step, known

    @staticmethod
    def _outputs(
        props: dict[str, Any],
        workload: Workload,
        decision: Decision,
        lifecycle: Lifecycle,
        recorded: str | None,
        reported: Mapping[str, Mapping[str, Any]],
        held_before: Sequence[str] = (),
    ) -> dict[str, Any]:
        rendered = _materialised(props, workload, decision, lifecycle, reported)
        if rendered.held and rendered.held != list(held_before) and not props.get("watchOperators"):
            # said once, when it starts; the output "held" keeps saying it
            pulumi.log.warn(
                f"workload {workload.name!r}: {'; '.join(rendered.held)}; nothing reads the cluster back "
                "in this stack (render mode, or readiness applied), so it is not rendered"
            )
        upcoming = next_change(lifecycle, _window(props, workload, decision))
        if _direct(props) and lifecycle.phase is Phase.PROVISIONING:
            upcoming = pass_instant(props["direct"])  # the next pass declares the VM: due at once
        return {
            **props,
            **({"direct": _without_basis(props["direct"])} if _direct(props) else {}),
            "decision": decision.document(),
            "phase": lifecycle.phase.value,
            "lifecycle": lifecycle.document(),
            "nextChangeAt": stamp(upcoming) if upcoming else None,
            "manifests": rendered.objects,
            "resolved": rendered.used,
            "held": rendered.held,
            "reservation": {"key": reservation_key(props), "phase": recorded},
        }


def _waiting_outputs(
    props: dict[str, Any],
    waiting: Waiting,
    now: datetime,
    earlier: Lifecycle | None = None,
    queued: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A workload waiting in the scheduler's queue: no decision and no objects yet, its position and
    reason recorded, and due again soon (the next pass finds it admitted, or still waiting). One
    that went into the queue from a placement (a failover, a preemption) keeps that ``earlier``
    lifecycle, and each later pass what the one before it ``queued``: its events, and the earlier
    lifecycle its placement from the queue goes on from (its failovers still count)."""
    reason = waiting.describe()
    pending = {"at": stamp(now), "phase": PENDING, "reason": reason}
    events: list[dict[str, Any]]
    before: dict[str, Any] | None
    if earlier is not None:
        events, before = [*(e.model_dump(mode="json") for e in earlier.events), pending], earlier.document()
    elif queued:
        events, before = list(queued.get("events") or []), queued.get("earlier")
        if not events or events[-1].get("phase") != PENDING:
            events.append(pending)  # its position moves on every pass: only its entry is an event
    else:
        events, before = [pending], None
    lifecycle: dict[str, Any] = {"phase": PENDING, "reason": reason, "events": events[-MAX_EVENTS:]}
    if before:
        lifecycle["earlier"] = before
    return {
        **props,
        "decision": None,
        "phase": PENDING,
        "lifecycle": lifecycle,
        "nextChangeAt": stamp(now + QUEUE_POLL),
        "manifests": [],
        "resolved": {},
        "held": [],
        "reservation": {
            "key": reservation_key(props),
            "phase": PENDING,
            "position": waiting.position,
            "priorityClass": waiting.answer.get("priority_class"),
        },
    }


def _operator_step(
    props: dict[str, Any],
    workload: Workload,
    decision: Decision,
    lifecycle: Lifecycle,
    window: Window,
    now: datetime,
    manifests: list[dict[str, Any]],
    resolved: Mapping[str, Mapping[str, Any]] | None,
) -> tuple[Step, Mapping[str, Mapping[str, Any]]]:
    """An operator-mode step: what the operators report is read only while the objects exist."""
    if not props.get("watchOperators"):
        # No operator runs where nothing is read back (render mode, readiness "applied"): a run
        # counts from when its objects are applied, and an object held for a status that only an
        # operator reports stays out (the outputs' "held" and a warning say which).
        return advance(lifecycle, window, now), dict(resolved or {})
    seen: list[Observation] = []

    def observe() -> Observation:  # called only while the objects exist
        from greenops.placing.observe import ClusterObserver

        observer = ClusterObserver(props.get("kubeconfig"), props.get("kubeContext"))
        try:
            seen.append(
                observer.observe(
                    workload.name, decision.provider, manifests or _render(props, workload, decision, {}).objects
                )
            )
            return seen[-1]
        finally:
            observer.close()

    step = advance(lifecycle, window, now, observe)
    return step, _known(resolved, seen[-1].reported if seen else {})


def _render(
    props: dict[str, Any], workload: Workload, decision: Decision, reported: Mapping[str, Mapping[str, Any]]
) -> Rendered:
    settings = RenderSettings.model_validate(props.get("render") or {})
    return render_set(
        workload,
        decision,
        settings,
        load_catalog(),
        reported,
        report=props.get("report"),
        secrets=props.get("runSecrets"),
    )


def _materialised(
    props: dict[str, Any],
    workload: Workload,
    decision: Decision,
    lifecycle: Lifecycle,
    reported: Mapping[str, Mapping[str, Any]],
) -> Rendered:
    """The objects that exist in this phase: none before the gate and after the run, and none in
    direct mode, whose VM is the program's to declare."""
    if not lifecycle.phase.materialised or _direct(props):
        return Rendered([], [], {})
    rendered = _render(props, workload, decision, reported)
    restored = sum(1 for d in lifecycle.drift if d.restored)
    return replace(rendered, objects=[_restoring(o, restored) for o in rendered.objects]) if restored else rendered


def _restoring(obj: dict[str, Any], restored: int) -> dict[str, Any]:
    """``obj`` as re-applied after edits by hand were found ``restored`` times: the count changes the
    objects, so the ConfigGroup applies them again, and patchForce makes Pulumi's server-side apply
    take back the fields the edit's field manager took (without it the apply stops at a conflict)."""
    meta = obj.get("metadata") or {}
    notes = {**(meta.get("annotations") or {}), RESTORED_ANNOTATION: str(restored), "pulumi.com/patchForce": "true"}
    return {**obj, "metadata": {**meta, "annotations": notes}}


def _direct_step(
    props: dict[str, Any], workload: Workload, lifecycle: Lifecycle, window: Window, now: datetime, just_placed: bool
) -> Step:
    """The step of a direct workload, as the program's verdict had it: the VM an earlier pass created
    (the record's machine) is the observation; for a decision made in this pass, at most the gate
    opens (the program had no record of it, so its VM comes on the next pass)."""
    direct = props["direct"]
    declared = bool(direct.get("declared"))
    seen = NOT_DECLARED if just_placed else observation(direct.get("machine"))
    step = advance(lifecycle, window, now, lambda: seen, DIRECT_DECLARED if declared else DIRECT_NOT_DECLARED)
    due = step.replace is None and step.lifecycle.phase.materialised
    if not just_placed and declared != due:
        # Equal records and machines at one instant give equal steps: this is a bug; nothing is changed.
        raise GreenOpsError(
            f"workload {workload.name!r}: the program {'declared' if declared else 'did not declare'} the VM, "
            f"but the placement's record moves to {step.lifecycle.phase.value}; nothing was changed"
        )
    return step


def _without_basis(direct: dict[str, Any]) -> dict[str, Any]:
    """The verdict as kept in the outputs: its basis is the lifecycle recorded beside it."""
    return {k: v for k, v in direct.items() if k != "basis"}


def _vm_may_exist(olds: dict[str, Any], before: Lifecycle) -> bool:
    """A VM exists, or is being created, for this placement: it cannot change mode now."""
    if before.phase is Phase.RUNNING:
        return True
    # (direct mode's Provisioning before its VM is declared has none yet)
    return before.phase is Phase.PROVISIONING and (
        not _direct(olds) or bool((olds.get("direct") or {}).get("declared"))
    )


def _stale(props: dict[str, Any], recorded: dict[str, Any] | None) -> str:
    basis = props["direct"].get("basis")
    said = (basis or {}).get("phase", "no record")
    has = (recorded or {}).get("phase", "no record")
    return (
        f"workload {_name(props)!r}: this pass read the placement's record as {said}, but the placement's "
        f"own says {has}: nothing was changed. Under `pulumi up` the record is the stack's outputs, which "
        "are those of the last successful update; run `greenops up` or `greenops reconcile` once, which "
        "read the record from the state itself"
    )


def _known(
    resolved: Mapping[str, Mapping[str, Any]] | None, reported: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """What the objects were rendered with before, updated by what the cluster reports now. A field
    the cluster no longer shows (an operator re-syncing, a status briefly cleared) keeps its recorded
    value, so an Instance is never dropped from the set, and deleted, for a status that blinked."""
    known = {k: dict(v) for k, v in (resolved or {}).items()}
    for key, status in reported.items():
        known.setdefault(key, {}).update({f: v for f, v in status.items() if v not in (None, "", [], {})})
    return known


def _carried(olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
    """The inputs of this pass with the run's report an earlier pass got (it lives in the outputs)."""
    if not news.get("completionUrl") or olds.get("completionUrl") != news.get("completionUrl"):
        return news
    return {**news, "report": olds.get("report")}


def _recorded(outputs: dict[str, Any]) -> str | None:
    """The phase the scheduler's record has; a state written before the record existed has none."""
    return (outputs.get("reservation") or {}).get("phase")


def _window(props: dict[str, Any], workload: Workload, decision: Decision) -> Window:
    return Window.of(workload, decision, _lead(props), _failover_cap(props), props.get("drift") != "leave")


def _resizable(olds: dict[str, Any], news: dict[str, Any]) -> bool:
    """Only the size changed, of a workload whose VM exists on a provider that resizes it in place
    (operator mode; not one whose run reports its end, whose VM's user-data names the old booking):
    an update of the same Placement, not a replacement that would start its run again."""
    was, now = olds.get("workload") or {}, news.get("workload") or {}
    sized = {"cpu", "memory"}
    if not olds.get("decision") or _direct(olds) or _direct(news) or olds.get("report"):
        return False
    if olds.get("phase") not in (Phase.PROVISIONING.value, Phase.RUNNING.value):
        return False
    if (olds["decision"] or {}).get("provider") not in IN_PLACE:
        return False
    return {k: v for k, v in was.items() if k not in sized} == {k: v for k, v in now.items() if k not in sized}


def _size_change(was: Workload, now: Workload) -> str:
    changes = [
        f"{field} {getattr(was, field):g}{unit} -> {getattr(now, field):g}{unit}"
        for field, unit in (("cpu", " vCPU"), ("memory", " GB"))
        if getattr(was, field) != getattr(now, field)
    ]
    return "the size change (" + ", ".join(changes) + ")"


def _failover_cap(props: dict[str, Any]) -> int:
    """How many times a placement may fail over; none in direct mode, whose VM the program declares
    from the record (its verdict is reached without one)."""
    if _direct(props):
        return 0
    given = props.get("maxFailovers")
    return DEFAULT_MAX_FAILOVERS if given is None else int(given)


def _failover(step: Step, before: Lifecycle, decision: Decision, now: datetime) -> Failover | None:
    """The attempt ``step`` gives up, when it fails over (not when a missed window is placed again)."""
    if step.failover is None:
        return None
    ran = (now - before.running_since).total_seconds() / 3600 if before.running_since else 0.0
    return Failover(
        at=now,
        region=region_of(decision),
        zone=decision.zone,
        phase=before.phase.value,
        reason=step.failover,
        ran_hours=round(ran, 4),
        intensity_before=decision.expected_intensity,
    )


def _avoid(before: Lifecycle, failover: Failover | None) -> frozenset[str]:
    return avoided((*before.failovers, failover)) if failover else frozenset()


def _stamp(decision: Decision) -> str:
    text: str = decision.document()["schedulingTime"]
    return text


class Placement(Resource):
    """A generic workload placed by policy and the scheduler (see PlacementProvider)."""

    decision: pulumi.Output[dict[str, Any]]
    phase: pulumi.Output[str]
    lifecycle: pulumi.Output[dict[str, Any]]
    nextChangeAt: pulumi.Output[str | None]  # noqa: N815 - output attributes carry the property names
    manifests: pulumi.Output[list[dict[str, Any]]]
    resolved: pulumi.Output[dict[str, Any]]  # what the cluster reported that the manifests were rendered with
    held: pulumi.Output[list[str]]  # objects not rendered yet, each with what it waits for
    reservation: pulumi.Output[dict[str, Any]]
    workload: pulumi.Output[dict[str, Any]]  # the spec as the Placement holds it (an input, echoed)

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions | None = None):
        # a run that reports its end carries a completion token in its report and its objects' user-data
        reports = (["report"] if props.get("completionUrl") else []) + (
            ["manifests"] if props.get("completionUrl") or props.get("runSecrets") else []
        )
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=[*SECRET_INPUTS, *reports])
        )
        with _pickler_restored():
            super().__init__(
                PlacementProvider(),
                name,
                {
                    **props,
                    "decision": None,
                    "phase": None,
                    "lifecycle": None,
                    "nextChangeAt": None,
                    "manifests": None,
                    "resolved": None,
                    "held": None,
                    "reservation": None,
                    **({"report": None} if props.get("completionUrl") else {}),
                },
                opts,
            )


@contextmanager
def _pickler_restored() -> Iterator[None]:
    """Undo what pulumi.dynamic's serialize_provider leaves behind (SDK 3.259 to at least 3.272): on
    every dynamic resource it wraps ``pickle._Pickler._batch_setitems`` around the current one and
    replaces ``save_dict``, and never puts them back. The chain grows by one wrapper per resource
    until pickling passes Python's recursion limit, a few hundred resources into a program. The
    serialisation happens inside the constructor, so restoring both afterwards keeps each
    resource's pickling one wrapper deep, exactly as the SDK meant it."""
    # (the pure-Python pickler's methods, which typeshed does not declare)
    saved = pickle._Pickler._batch_setitems, pickle._Pickler.save_dict  # type: ignore[attr-defined]
    try:
        yield
    finally:
        pickle._Pickler._batch_setitems, pickle._Pickler.save_dict = saved  # type: ignore[attr-defined]
