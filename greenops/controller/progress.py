"""The cluster path's lifecycle, recorded from the API server with the Pulumi path's own rules
(``greenops.placing.lifecycle.advance``): the same phases, the same times, the same reasons for
a failure; only the voice differs (Krateo renders, the controller asks it to).

A pass at ``now`` for one confirmed reservation and its VmTemplate:
- at the gate (``schedulingTime - provisioningLeadSeconds``) it asks Krateo to render the
  composition again, by writing ``spec.render`` (a spec change, so a new generation, which Krateo's
  composition controller renders at once; it would not for an annotation, which leaves the
  generation as it is, until its resync interval), and records Provisioning; the gate opens at the
  pass that sees the rendered VM object, so lateness counts from the real render;
- Running from the operator's Ready condition and its ``lastTransitionTime`` (or at once, when no
  operator is watched: ``--readiness applied``);
- Completed at ``runningSince + duration``; Failed on a terminal condition, on a VM object deleted
  while Running, or when not ready by ``deadline - duration``. At the end it asks Krateo to render
  again, which removes the VM.

Two rules differ from the Pulumi path's, because here the chart, not the pass, renders the VM, and
only an admission decides:
- **A missed gate opens late, or fails.** The Pulumi path places a missed window again; the cluster
  path cannot (a new decision is a new admission). The chart renders until ``schedulingTime +
  duration``, so a gate passed with room left before the deadline still opens, recorded late (a
  VmTemplate placed to start at once is always a little late); with no room, or once the chart's
  window is over, the run Fails and says to create the VmTemplate again.
- **The chart's window ends the run.** The chart counts from the decided start, the lifecycle from
  the actual one. A VM that came up after its start is removed by Krateo at ``schedulingTime +
  duration``; seen gone after that instant it is recorded Completed, retired by the chart, with how
  long it really ran, never Failed as if deleted by hand.

A reservation waiting in the scheduler's queue (Pending) has no window yet: the pass shows its
place on the VmPlacement. Once the queue places it, the VmTemplate (admitted without a decision) is
touched, so that admission asks again and writes the decision the booking replays; the gate is
judged from the next pass.

Each write is compared with the record first, so a replayed pass writes nothing; the record is
written last, so a pass cut short is done again whole by the next one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from greenops.charts import PROVISIONING_LEAD_SECONDS
from greenops.common.clock import parse_time, stamp
from greenops.common.errors import GreenOpsError
from greenops.models.duration import format_duration
from greenops.placing.lifecycle import Lifecycle, Observation, Phase, Reported, Voice, Window, advance

from .metrics import ControllerMetrics

# spec.render = "gate <instant>" | "end <instant>": why and when Krateo was asked to render. A spec
# field, so that writing it changes the VmTemplate's generation: Krateo's composition controller
# renders again on a generation change (and at its resync interval), never on metadata alone.
RENDER_FIELD = "render"

KRATEO = Voice(
    gate_opened="gate opened: Krateo asked to render the VM's objects, waiting for the operator to report the VM ready",
    waiting="waiting for the operator to report the VM ready",
    ready="the operator reports the VM ready since {since}",
)
NOT_REPLACED = (
    "the cluster path does not place a VmTemplate again by itself (a new decision is a new admission): "
    "delete it and create it again to place it anew"
)
log = logging.getLogger(__name__)


class UnreadableTemplate(GreenOpsError):
    """A VmTemplate or reservation lacks what its window is judged against; names the field."""


def window_of(template: dict[str, Any], row: dict[str, Any]) -> Window:
    """The window the record and the VmTemplate agree on: the booked start and duration, the
    VmTemplate's deadline and lead."""
    meta, spec = template["metadata"], template.get("spec") or {}
    name = f"VmTemplate {meta.get('namespace')}/{meta.get('name')}"
    try:
        deadline = parse_time(str(spec["deadline"]))
    except (KeyError, ValueError):
        raise UnreadableTemplate(f"{name}: spec.deadline {spec.get('deadline')!r} is not an RFC 3339 instant") from None
    lead = spec.get("provisioningLeadSeconds", PROVISIONING_LEAD_SECONDS)
    if not isinstance(lead, int | float) or isinstance(lead, bool) or lead < 0:
        raise UnreadableTemplate(f"{name}: spec.provisioningLeadSeconds {lead!r} is not a number of seconds >= 0")
    start, end = parse_time(row["start"]), parse_time(row["end"])
    hours = row.get("duration_hours")
    duration = timedelta(hours=hours) if hours else end - start
    runs = isinstance(spec.get("run"), dict)  # its VM powers itself off when the run ends
    return Window(
        start=start,
        duration=duration,
        lead=timedelta(seconds=lead),
        deadline=deadline,
        ends_itself=runs,
        reported=Reported.of(row.get("completion")),  # what the run itself said of its end
    )


PENDING = "Pending"  # the scheduler's queue holds the reservation: no placement yet


def decided(template: dict[str, Any]) -> bool:
    """Whether admission wrote a decision into the VmTemplate (a queued one is admitted without)."""
    return isinstance((template.get("spec") or {}).get("schedulingTime"), str)


def recorded_lifecycle(row: dict[str, Any]) -> Lifecycle:
    if row.get("lifecycle"):
        return Lifecycle.from_document(row["lifecycle"])
    booked = parse_time(row["created_at"]) if row.get("created_at") else parse_time(row["updated_at"])
    return Lifecycle.placed(booked, f"placed at admission: {row['zone']} from {stamp(parse_time(row['start']))}")


class Progress:
    """``observe(template, running)`` reads the operator's verdict; None: no operator is watched."""

    def __init__(
        self,
        record: Any,
        clock: Callable[[], datetime],
        request_render: Callable[[dict[str, Any], str], None],
        observe: Callable[[dict[str, Any], bool], Observation] | None,
        metrics: ControllerMetrics | None = None,
        tell: Callable[[dict[str, Any], str, str], None] = lambda *_: None,
        show: Callable[[dict[str, Any], dict[str, Any], Lifecycle], None] = lambda *_: None,
        prepare: Callable[[dict[str, Any], dict[str, Any]], None] = lambda *_: None,
        waiting: Callable[[dict[str, Any], dict[str, Any]], None] = lambda *_: None,
        readmit: Callable[[dict[str, Any], str], None] = lambda *_: None,
    ):
        """``tell(template, reason, message)``: an Event on the VmTemplate for each phase it enters;
        ``show(template, row, lifecycle)``: its status on the object, after every pass
        (greenops.controller.placement_status); ``prepare(template, row)``: what the render at the
        gate needs first (the run's report, greenops.controller.run_report); ``waiting(template,
        row)``: its status while its reservation waits in the scheduler's queue; ``readmit(template,
        value)``: a touch of the VmTemplate (an UPDATE) once the queue has placed it, so that
        admission writes the decision."""
        self.record = record
        self.clock = clock
        self.request_render = request_render
        self.observe = observe
        self.metrics = metrics or ControllerMetrics()
        self.tell = tell
        self.show = show
        self.prepare = prepare
        self.waiting = waiting
        self.readmit = readmit

    def step(self, template: dict[str, Any], row: dict[str, Any]) -> Lifecycle | None:
        """One pass for one reservation; the lifecycle written, or None when nothing changed."""
        if row["phase"] == PENDING:
            self.waiting(template, row)
            return None
        if row["phase"] == "Scheduled" and not decided(template):
            # the queue placed it after its admission: only admission writes a decision, so the
            # VmTemplate is touched and its UPDATE replays the booking; the gate waits for that
            self.readmit(template, stamp(self.clock()))
            return None
        if row["phase"] not in ("Scheduled", "Provisioning", "Running") or row.get("held_until"):
            return None  # ended, or a hold the sweep confirms first
        recorded = recorded_lifecycle(row)
        window = window_of(template, row)
        now = self.clock()
        observe = None
        if self.observe is not None:
            watch = self.observe
            observe = _once(lambda: watch(template, recorded.phase is Phase.RUNNING))
        before = _rendered(recorded, now, observe)
        after = self._retired_by_chart(template, before, window, now)
        if after is None:
            step = advance(before, window, now, observe, KRATEO)
            after = step.lifecycle if not step.replace else self._late(before, window, now, step.replace, observe)
        opened = before.phase is Phase.SCHEDULED and after.gate_opened_at is not None
        if after.phase.terminal and (before.phase.materialised or opened):
            self.request_render(template, f"end {stamp(now)}")  # the run is over: rendering again removes the VM
        elif opened:
            self.prepare(template, row)  # before the render: the chart reads what it writes
            self.request_render(template, f"gate {stamp(now)}")
            if observe is not None and after.phase is Phase.PROVISIONING:
                after = _asked(after, now)  # the gate is when the objects are seen, not when asked for
        before = recorded
        if row.get("lifecycle") and after == before:
            self.show(template, row, before)
            return None
        body: dict[str, Any] = {"lifecycle": after.document()}
        if after.phase is not Phase.SCHEDULED:
            body["phase"] = after.phase.value
            body["reason"] = after.reason[:1024]
        self.record.patch(row["key"], body, tenant=row["tenant"])
        self.show(template, row, after)
        self.metrics.moved(before.events, after.events)
        if not row.get("lifecycle") and after.phase is Phase.SCHEDULED:  # kubectl describe: why it waits
            gate = stamp(window.start - window.lead)
            self.tell(template, "Scheduled", f"{after.reason}; waits for its gate at {gate} ({GATE_RULE})")
        for event in after.events[len(before.events) :]:
            self.tell(template, event.phase.value, event.reason)
        if before.gate_opened_at is None and after.gate_opened_at is not None and after.phase is Phase.PROVISIONING:
            self.tell(template, "Rendered", after.reason)  # the gate opened at the render, within Provisioning
        return after

    def _late(
        self, before: Lifecycle, w: Window, now: datetime, missed: str, observe: Callable[[], Observation] | None
    ) -> Lifecycle:
        chart_end = w.start + w.duration
        if now >= chart_end:
            why = f"{missed}; the chart's window ended at {stamp(chart_end)}; {NOT_REPLACED}"
            return before.to(Phase.FAILED, now, why, failed_at=now)
        late = Window(start=now, duration=w.duration, lead=timedelta(0), deadline=w.deadline, ends_itself=w.ends_itself)
        opened = advance(before, late, now, observe, KRATEO).lifecycle  # the gate, now
        return opened.model_copy(update={"reason": f"gate opened late ({missed}): {opened.reason}"})

    def _retired_by_chart(
        self, template: dict[str, Any], before: Lifecycle, w: Window, now: datetime
    ) -> Lifecycle | None:
        chart_end = w.start + w.duration
        if before.phase is not Phase.RUNNING or self.observe is None or now < chart_end:
            return None
        if not self.observe(template, True).missing:
            return None
        assert before.running_since is not None
        ran = format_duration(max(chart_end - before.running_since, timedelta(0)))
        return before.to(
            Phase.COMPLETED,
            now,
            f"completed: retired by the chart at the end of its window {stamp(chart_end)} (schedulingTime + "
            f"duration), having run {ran} from {stamp(before.running_since)}",
            completed_at=now,
        )


GATE_RULE = "schedulingTime - provisioningLeadSeconds"
ASKED = "gate due: Krateo asked at {at} to render the VM's objects; the gate opens when they are seen"
RENDERED = "gate opened: the VM's objects were seen rendered at {at}, waiting for the operator to report the VM ready"


def _asked(lc: Lifecycle, now: datetime) -> Lifecycle:
    """Provisioning, its gate not yet open: Krateo was asked to render, nothing is seen yet (a late
    gate keeps saying why it is late)."""
    reason = lc.reason.replace(KRATEO.gate_opened, ASKED.format(at=stamp(now)))
    return lc.model_copy(update={"gate_opened_at": None, "reason": reason})


def _rendered(lc: Lifecycle, now: datetime, observe: Callable[[], Observation] | None) -> Lifecycle:
    """The gate opens at the pass that first sees the rendered VM object: lateness is counted from
    when Krateo really rendered, not from when it was asked."""
    if lc.phase is not Phase.PROVISIONING or lc.gate_opened_at is not None or observe is None:
        return lc
    if not observe().rendered:
        return lc
    return lc.model_copy(update={"gate_opened_at": now, "reason": RENDERED.format(at=stamp(now))})


def _once(read: Callable[[], Observation]) -> Callable[[], Observation]:
    """``read`` called at most once per pass: the gate and the lifecycle look at the same verdict."""
    seen: list[Observation] = []

    def observe() -> Observation:
        if not seen:
            seen.append(read())
        return seen[0]

    return observe
