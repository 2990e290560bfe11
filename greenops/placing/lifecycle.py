"""Where a placed workload is in its life, as recorded, never recomputed from the clock alone.

A pass (``up``/``reconcile``) reads the recorded ``Lifecycle``, the clock and, in a cluster whose
operators are watched, what the operator reports about the VM's objects, and ``advance`` moves it
forward. Phases only ever move forward, so a clock that steps back cannot reopen a finished run,
and every run gets its full duration from its actual start:

    Scheduled ──gate opens──> Provisioning ──operator: Ready──> Running ──start+duration──> Completed
        │ start passed unprovisioned:                  │ terminal error, object deleted,     │
        │   room before the deadline -> re-placed      │ or not ready by deadline-duration   │
        └── no room -> Failed <────────────────────────┴─────────────────────────────────────┘
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from pydantic import AwareDatetime, Field, field_serializer

from greenops.common.clock import parse_time, stamp
from greenops.models.decision import Decision
from greenops.models.duration import format_duration
from greenops.models.workload import Workload, _Model
from greenops.placing.failover import Failover
from greenops.renderers.user_data import RUN_LOG

MAX_EVENTS = 20  # the newest transitions kept in state: enough to explain a run, bounded in size


class Phase(str, Enum):
    SCHEDULED = "Scheduled"  # decided; nothing provider-specific exists yet
    PROVISIONING = "Provisioning"  # gate open, objects applied, the operator has not reported the VM ready
    RUNNING = "Running"  # the VM is up; the run's clock started at runningSince
    COMPLETED = "Completed"  # ran its full duration and was retired
    FAILED = "Failed"  # will not run (again): the reason says why

    @property
    def materialised(self) -> bool:
        """The VM's objects exist in this phase."""
        return self in (Phase.PROVISIONING, Phase.RUNNING)

    @property
    def terminal(self) -> bool:
        return self in (Phase.COMPLETED, Phase.FAILED)


class Event(_Model):
    at: AwareDatetime
    phase: Phase
    reason: str

    @field_serializer("at")
    def _ser(self, v: datetime) -> str:
        return stamp(v)


class Drift(_Model):
    """Declared fields a pass found edited by hand on the workload's objects, and what it did."""

    at: AwareDatetime
    found: tuple[str, ...]
    restored: bool = Field(description="re-applied as declared (else left, as the stack says, and recorded)")

    @field_serializer("at")
    def _ser(self, v: datetime) -> str:
        return stamp(v)


class Lifecycle(_Model):
    """The recorded life of one placement, kept in Placement's state."""

    phase: Phase = Phase.SCHEDULED
    reason: str = ""
    gate_opened_at: AwareDatetime | None = None
    running_since: AwareDatetime | None = Field(default=None, description="the actual start")
    completed_at: AwareDatetime | None = Field(default=None, description="when the run was retired")
    failed_at: AwareDatetime | None = None
    replacements: int = Field(default=0, description="how often it was placed again (a missed window, a failover)")
    failovers: tuple[Failover, ...] = Field(default=(), description="the attempts given up (greenops.placing.failover)")
    drift: tuple[Drift, ...] = Field(default=(), description="edits by hand found on the objects, newest last")
    events: tuple[Event, ...] = ()

    @field_serializer("gate_opened_at", "running_since", "completed_at", "failed_at")
    def _ser_time(self, v: datetime | None) -> str | None:
        return None if v is None else stamp(v)

    @classmethod
    def placed(
        cls, now: datetime, reason: str, earlier: Lifecycle | None = None, failover: Failover | None = None
    ) -> Lifecycle:
        """A fresh Scheduled record; a re-placement keeps the earlier events and failovers (with
        ``failover`` when it is one) and counts itself."""
        base = earlier.events if earlier else ()
        count = earlier.replacements + 1 if earlier else 0
        failovers = (earlier.failovers if earlier else ()) + ((failover,) if failover else ())
        return cls(
            reason=reason,
            replacements=count,
            failovers=failovers,
            events=(base + (Event(at=now, phase=Phase.SCHEDULED, reason=reason),))[-MAX_EVENTS:],
        )

    def to(self, phase: Phase, now: datetime, reason: str, **times: datetime) -> Lifecycle:
        event = Event(at=now, phase=phase, reason=reason)
        return self.model_copy(
            update={"phase": phase, "reason": reason, **times, "events": (self.events + (event,))[-MAX_EVENTS:]}
        )

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Lifecycle:
        return cls.model_validate(doc)


@dataclass(frozen=True)
class Window:
    """The fixed facts a lifecycle is judged against: the decided start and the workload's bounds."""

    start: datetime
    duration: timedelta
    lead: timedelta
    deadline: datetime
    # the VM powers itself off when its run ends (the workload has a ``run``): its stop is the end
    ends_itself: bool = False
    # what the run reported of its end (greenops.reservations.completion), as the record holds it
    reported: Reported | None = None
    # attempts it may fail over to after the first (greenops.placing.failover); 0: a terminal error fails it
    failover_cap: int = 0
    # an edit by hand of its objects is restored (re-applied as declared); else only recorded
    restore_drift: bool = True

    @property
    def gate(self) -> datetime:
        return self.start - self.lead

    @property
    def latest_start(self) -> datetime:
        return self.deadline - self.duration

    @classmethod
    def of(
        cls, workload: Workload, decision: Decision, lead: timedelta, failover_cap: int = 0, restore_drift: bool = True
    ) -> Window:
        """The window a placement is judged against: its decided start and the workload's bounds."""
        return cls(
            decision.scheduling_time,
            workload.duration,
            lead,
            workload.deadline,
            workload.run is not None,
            failover_cap=failover_cap,
            restore_drift=restore_drift,
        )


@dataclass(frozen=True)
class Reported:
    """A run's own report of its end: its script's exit status, and when the scheduler received it."""

    exit_status: int
    at: datetime

    @classmethod
    def of(cls, completion: Mapping[str, Any] | None) -> Reported | None:
        """From a reservation's ``completion`` (``{"exitStatus", "reportedAt"}``); None when absent."""
        if not completion:
            return None
        return cls(int(completion["exitStatus"]), parse_time(str(completion["reportedAt"])))


@dataclass(frozen=True)
class Observation:
    """What the operator reports about a workload's objects (see greenops.placing.observe)."""

    ready: bool
    ready_since: datetime | None = None
    failure: str | None = None  # a terminal error the operator will not retry by itself
    missing: tuple[str, ...] = ()  # objects that should exist and do not (deleted by hand)
    detail: str = ""  # the VM object's current condition, for the reason while waiting; empty: nothing reported
    # every object read back, "Kind/name" -> its status: what a held object of the set waits for
    reported: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    stopped: bool = False  # the VM is powered off: a workload with a run has ended it
    drift: tuple[str, ...] = ()  # declared fields the cluster holds otherwise: edited by hand (observe.drift_of)
    rendered: bool = False  # the VM's object exists: what was asked for at the gate has been rendered


@dataclass(frozen=True)
class Step:
    lifecycle: Lifecycle
    replace: str | None = None  # set when the window was missed with room left: place again, this is why
    failover: str | None = None  # set (with replace) when it must go elsewhere: what ended this attempt
    preempted: bool = False  # set (with replace) when the record gave its hours to a higher class


@dataclass(frozen=True)
class Voice:
    """How a pass words the reasons it records: who brings the VM up, and who says it is up. The
    phases do not depend on it."""

    gate_opened: str = "gate opened: objects applied, waiting for the operator to report the VM ready"
    waiting: str = "waiting for the operator to report the VM ready"  # followed by ": <what it reports>"
    ready: str = "the operator reports the VM ready since {since}"  # after "running: "


OPERATOR = Voice()

APPLIED = "no operator is watched here (readiness: applied), so the run counts from when its objects were applied"


def advance(
    lc: Lifecycle,
    window: Window,
    now: datetime,
    observe: Callable[[], Observation] | None = None,
    voice: Voice = OPERATOR,
) -> Step:
    """The lifecycle after a pass at ``now``. ``observe`` reads the operator's verdict (only called
    while the objects exist); without it, objects count as running once applied (render mode).
    ``voice`` words the reasons (direct mode has no operator)."""
    if lc.phase.terminal:
        return Step(lc)
    if lc.phase is Phase.SCHEDULED:
        return _scheduled(lc, window, now, observe, voice)
    obs = observe() if observe else None
    if lc.phase is Phase.PROVISIONING:
        step = _provisioning(lc, window, now, obs, voice)
    else:
        step = _running(lc, window, now, obs)
    return _with_drift(step, window, now, obs)


def _with_drift(step: Step, window: Window, now: datetime, obs: Observation | None) -> Step:
    """``step`` with the edits by hand this pass found recorded, while its objects still exist. Left
    edits are recorded once; restored ones each time they are found again (each is re-applied)."""
    lc = step.lifecycle
    if obs is None or not obs.drift or step.replace is not None or not lc.phase.materialised:
        return step
    last = lc.drift[-1] if lc.drift else None
    if not window.restore_drift and last is not None and last.found == obs.drift:
        return step
    seen = Drift(at=now, found=obs.drift, restored=window.restore_drift)
    return replace(step, lifecycle=lc.model_copy(update={"drift": (*lc.drift, seen)[-MAX_EVENTS:]}))


def _scheduled(
    lc: Lifecycle, w: Window, now: datetime, observe: Callable[[], Observation] | None, voice: Voice
) -> Step:
    if now < w.gate:
        return Step(lc)
    if now <= w.start:
        opened = lc.to(Phase.PROVISIONING, now, voice.gate_opened, gate_opened_at=now)
        if observe is None:
            return Step(opened.to(Phase.RUNNING, now, f"running: {APPLIED}", running_since=now))
        return Step(opened)
    missed = (
        f"missed its window: the gate was due at {stamp(w.gate)} for the start {stamp(w.start)}, "
        f"and no reconcile ran until {stamp(now)}"
    )
    if now + w.duration <= w.deadline:
        return Step(lc, replace=missed)
    return Step(
        lc.to(
            Phase.FAILED,
            now,
            f"{missed}; the deadline {stamp(w.deadline)} leaves no room for {format_duration(w.duration)} any more",
            failed_at=now,
        )
    )


def _provisioning(lc: Lifecycle, w: Window, now: datetime, obs: Observation | None, voice: Voice) -> Step:
    if w.reported is not None:  # the run is over before the operator said the VM was ready
        since = lc.gate_opened_at or now
        return _then_running(lc.to(Phase.RUNNING, now, "running: it reported its end", running_since=since), w, now)
    if obs is None:
        return _then_running(lc.to(Phase.RUNNING, now, f"running: {APPLIED}", running_since=now), w, now)
    if obs.failure:
        return fail_over(lc, w, now, f"the operator reports a terminal error: {obs.failure}")
    if obs.missing:
        return Step(
            lc.to(
                Phase.FAILED,
                now,
                f"deleted outside the platform while Provisioning: {', '.join(obs.missing)}",
                failed_at=now,
            )
        )
    if obs.ready:
        # The operator's own transition time is when the VM really came up; the pass only saw it later.
        since = (
            obs.ready_since
            if obs.ready_since and lc.gate_opened_at and lc.gate_opened_at <= obs.ready_since <= now
            else now
        )
        return _then_running(
            lc.to(
                Phase.RUNNING,
                now,
                f"running: {voice.ready.format(since=stamp(since))}",
                running_since=since,
            ),
            w,
            now,
            obs,
        )
    if now > w.latest_start:
        return Step(
            lc.to(
                Phase.FAILED,
                now,
                f"not ready by {stamp(w.latest_start)}, the last start that meets its deadline "
                f"{stamp(w.deadline)}; the operator says: {obs.detail or 'nothing yet'}",
                failed_at=now,
            )
        )
    if not obs.detail:  # the operator has said nothing yet: the gate-opened record stands (stable previews)
        return Step(lc)
    waiting = f"{voice.waiting}: {obs.detail}"
    return Step(lc if lc.reason == waiting else lc.model_copy(update={"reason": waiting}))


def _then_running(lc: Lifecycle, w: Window, now: datetime, obs: Observation | None = None) -> Step:
    """A run that became ready long ago may already be over by this pass, or its VM off."""
    return _running(lc, w, now, obs)


def _running(lc: Lifecycle, w: Window, now: datetime, obs: Observation | None) -> Step:
    assert lc.running_since is not None
    end = lc.running_since + w.duration
    if w.reported is not None and w.reported.at <= max(end, now):
        return Step(_ended_by_report(lc, w.reported, now))
    if now >= end:
        return Step(
            lc.to(
                Phase.COMPLETED,
                now,
                f"completed: ran {format_duration(w.duration)} from {stamp(lc.running_since)}, retired at {stamp(now)}",
                completed_at=now,
            )
        )
    if obs and obs.failure:
        return fail_over(lc, w, now, f"the operator reports a terminal error: {obs.failure}")
    if obs and obs.stopped and w.ends_itself:
        # The stop is seen by this pass; when exactly the VM went off, no operator says.
        return Step(
            lc.to(
                Phase.COMPLETED,
                now,
                f"completed: its run ended and the VM powered itself off (seen at {stamp(now)}, "
                f"{(now - lc.running_since).total_seconds() / 60:.0f} min after it started at "
                f"{stamp(lc.running_since)})",
                completed_at=now,
            )
        )
    if obs and obs.missing:
        return Step(
            lc.to(
                Phase.FAILED,
                now,
                f"deleted outside the platform while Running: {', '.join(obs.missing)}; "
                "not recreated, so a half-done run is never started twice",
                failed_at=now,
            )
        )
    return Step(lc)


def fail_over(lc: Lifecycle, w: Window, now: datetime, why: str) -> Step:
    """This attempt cannot go on (``why``): placed again elsewhere while an attempt is left
    (``w.failover_cap``) and the deadline leaves room for the whole run from now; Failed otherwise,
    saying which of the two ran out. A run fails over from the start: its hours there are lost."""
    made = len(lc.failovers)
    if made < w.failover_cap and now + w.duration <= w.deadline:
        return Step(lc, replace=f"failover: {why}", failover=why)
    if w.failover_cap == 0:
        return Step(lc.to(Phase.FAILED, now, why, failed_at=now))
    left = (
        f"no failover is left ({made} of {w.failover_cap} made)"
        if made >= w.failover_cap
        else f"the deadline {stamp(w.deadline)} leaves no room for {format_duration(w.duration)} elsewhere"
    )
    return Step(lc.to(Phase.FAILED, now, f"{why}; {left}", failed_at=now))


def _ended_by_report(lc: Lifecycle, r: Reported, now: datetime) -> Lifecycle:
    """The run's own report: Completed at its time for exit status 0, Failed otherwise; the time
    is the scheduler's receipt, never after this pass, never before the run started."""
    assert lc.running_since is not None
    at = min(max(r.at, lc.running_since), now)
    ran = f"having run {format_duration(at - lc.running_since)} from {stamp(lc.running_since)}"
    if r.exit_status == 0:
        return lc.to(
            Phase.COMPLETED, now, f"completed: its run reported exit status 0 at {stamp(at)}, {ran}", completed_at=at
        )
    return lc.to(
        Phase.FAILED,
        now,
        f"failed: its run's script exited with status {r.exit_status} at {stamp(at)}, {ran} (its output is in "
        f"{RUN_LOG} on the VM)",
        failed_at=at,
    )


def next_change(lc: Lifecycle, window: Window) -> datetime | None:
    """The next instant at which the clock alone moves this lifecycle: the gate, the last start
    that meets the deadline, or the end of the run. An unattended reconciler wakes up then."""
    if lc.phase is Phase.SCHEDULED:
        return window.gate
    if lc.phase is Phase.PROVISIONING:
        return window.latest_start
    if lc.phase is Phase.RUNNING and lc.running_since is not None:
        return lc.running_since + window.duration
    return None


def from_outputs(outs: dict[str, Any], window: Window) -> Lifecycle:
    """The recorded lifecycle; state written before lifecycles were recorded carried only a
    clock-derived ``status``, which is taken at its word once."""
    if outs.get("lifecycle"):
        return Lifecycle.from_document(outs["lifecycle"])
    status = outs.get("status")
    note = "recorded from the status of an earlier version"
    if status == "Running":
        return Lifecycle(phase=Phase.RUNNING, reason=note, gate_opened_at=window.gate, running_since=window.start)
    if status == "Completed":
        end = window.start + window.duration
        return Lifecycle(phase=Phase.COMPLETED, reason=note, running_since=window.start, completed_at=end)
    return Lifecycle(reason=note)
