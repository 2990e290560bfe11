"""Reconciliation: one pass (``greenops reconcile``) and the loop that repeats it unattended
(``greenops reconcile --watch``).

A pass is a ``pulumi up`` of the stack: Placement advances each workload's recorded lifecycle, the
ConfigGroups apply or delete the VM objects. It reports what changed and the next instant at
which the clock alone changes something (a gate opens, a run ends), so the loop can wake up then
rather than only on its fixed beat.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from opentelemetry import trace

from greenops.common.clock import parse_time, stamp, system_clock
from greenops.common.errors import GreenOpsError
from greenops.engine import automation
from greenops.observability import spans, tracing
from greenops.placing.due import Due, due_workloads

if TYPE_CHECKING:
    from pulumi import automation as auto

VERBS = {
    "Scheduled": "re-placed",
    "Provisioning": "gate",
    "Running": "started",
    "Completed": "retired",
    "Failed": "FAILED",
}
KINDS = tuple(verb.lower() for verb in VERBS.values())  # transitions by kind: the verbs, as metric labels
WHAT_CHANGES = {"Scheduled": "gate opens", "Provisioning": "last start before its deadline", "Running": "run ends"}
WAKE_MARGIN = timedelta(seconds=1)  # wake just after the instant, so the pass sees it as reached
_INTERVAL = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_interval(text: str) -> timedelta:
    """``5m``, ``30s``, ``1h30m``: a unit is required, so a bare number is never guessed at."""
    m = _INTERVAL.match(text.strip())
    if not text.strip() or not m or not any(m.groups()):
        raise GreenOpsError(f"interval {text!r}: use hours, minutes or seconds, e.g. '5m', '30s' or '1h30m'")
    h, mins, secs = (int(g or 0) for g in m.groups())
    value = timedelta(hours=h, minutes=mins, seconds=secs)
    if value <= timedelta(0):
        raise GreenOpsError(f"interval {text!r}: must be longer than zero")
    return value


@dataclass(frozen=True)
class Transition:
    """One recorded lifecycle event a pass added to a workload's row."""

    workload: str
    phase: str  # the phase reached
    reason: str
    missed: bool  # its window was missed: re-placed, or failed, straight from Scheduled

    @property
    def kind(self) -> str:
        """gate, started, retired, re-placed or failed: the log's verb, as a metric label."""
        return VERBS.get(self.phase, "changed").lower()


def _event_key(event: dict[str, Any]) -> tuple[Any, ...]:
    return event.get("at"), event.get("phase"), event.get("reason")  # an Event's fields (lifecycle.Event)


def _transitions(name: str, old: dict[str, Any] | None, row: dict[str, Any]) -> list[Transition]:
    events = row.get("events") or []
    seen = {_event_key(e) for e in (old or {}).get("events") or []}
    fresh = [i for i, e in enumerate(events) if _event_key(e) not in seen]
    if old is None:
        fresh = fresh[1:]  # the first event is the placement itself
    # Scheduled moves on to Scheduled (placed again) or to Failed only when its window was missed
    # (greenops.placing.lifecycle: a start passed unprovisioned)
    return [
        Transition(
            name,
            events[i]["phase"],
            events[i]["reason"],
            i > 0 and events[i - 1]["phase"] == "Scheduled" and events[i]["phase"] in ("Scheduled", "Failed"),
        )
        for i in fresh
    ]


def transitions(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[Transition]:
    """Every recorded transition a pass made, from the placement rows before and after it."""
    return [t for name, row in after.items() for t in _transitions(name, before.get(name), row)]


def change_entries(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(change, workload, detail) for each recorded transition a pass made, from the placement rows."""
    changes = []
    for name, row in after.items():
        old = before.get(name)
        new = _transitions(name, old, row)
        if old is None:
            changes.append(("placed", name, f"{row['provider']}/{row['region']} ({row['zone']}) from {row['start']}"))
        changes += [(VERBS.get(t.phase, "changed"), name, t.reason) for t in new]
        if old is not None and not new and old.get("reason") != row.get("reason"):
            changes.append(("waiting", name, str(row.get("reason"))))
    for name in sorted(set(before) - set(after)):
        changes.append(("removed", name, ""))
    return changes


def lifecycle_changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[str]:
    """One line per recorded transition a pass made, with its reason: a log line each (the watch loop's
    log, and the e2e tests, read them), so it stays a padded line rather than a table."""
    return [
        f"{change:9} {name}" + (f": {detail}" if detail else "")
        for change, name, detail in change_entries(before, after)
    ]


def upcoming(rows: list[dict[str, Any]]) -> tuple[datetime, str] | None:
    """The earliest next-change instant over the placements, with what happens then."""
    due = [
        (parse_time(r["nextChangeAt"]), f"{r['workload']}: {WHAT_CHANGES.get(r.get('phase') or '', 'changes')}")
        for r in rows
        if r.get("nextChangeAt")
    ]
    return min(due) if due else None


def oldest_overdue_gate(rows: list[dict[str, Any]], now: datetime) -> timedelta:
    """How long ago the earliest gate still closed at ``now`` was due (zero: none). A Scheduled
    row's next change is its gate (greenops.placing.lifecycle.next_change)."""
    gates = [parse_time(r["nextChangeAt"]) for r in rows if r.get("phase") == "Scheduled" and r.get("nextChangeAt")]
    return max((now - gate for gate in gates if gate <= now), default=timedelta(0))


@dataclass
class Pass:
    counts: str
    changes: list[str]
    next_change: tuple[datetime, str] | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    resource_changes: dict[str, int] = field(default_factory=dict)
    entries: list[tuple[str, str, str]] = field(default_factory=list)  # the changes as (change, workload, detail)
    due: Due | None = None  # a pass of the due workloads: which, and why; None for a full pass

    def document(self, stack: str) -> dict[str, Any]:
        """The summary as ``-o json`` prints it."""
        return {
            "stack": stack,
            "pass": "full" if self.due is None else "due",
            "due": None if self.due is None else {**self.due.declared, **self.due.removed},
            "resourceChanges": self.resource_changes,
            "changes": [{"change": c, "workload": w, "detail": d} for c, w, d in self.entries],
            "nextChange": {"at": stamp(self.next_change[0]), "what": self.next_change[1]} if self.next_change else None,
        }

    def summary(self, stack: str) -> str:
        lines = [f"reconcile {stack}: {self.counts}"]
        lines += self.changes or ["no workload changed state"]
        if self.next_change:
            lines.append(f"next change: {self.next_change[1]} at {stamp(self.next_change[0])}")
        return "\n".join(lines)


@tracing.spanned(spans.PASS)
def reconcile_once(st: auto.Stack, stream: bool = False, due_only: bool = False) -> Pass:
    """One ``up``; raises StackLocked when another run holds the stack's lock. ``due_only``: an
    ``up`` of the due workloads alone (greenops/placing/due.py), and none when nothing is due."""
    trace.get_current_span().set_attribute(spans.STACK, st.name)
    # The pass's reads and its `up` are held as one: no other run's `up` may land between the
    # placements it reads and the update it makes from them (a targeted `up` writes every other
    # workload's row as read). A due pass that finds the stack held still reads: with nothing
    # due it needs no update, so it is not a skipped pass.
    with ExitStack() as held:
        try:
            held.enter_context(automation.hold(st))
        except automation.StackLocked as refused:
            if not due_only:
                raise
            return _pass(st, stream, due_only, refused)
        return _pass(st, stream, due_only)


def _pass(st: auto.Stack, stream: bool, due_only: bool, refused: automation.StackLocked | None = None) -> Pass:
    """The pass itself; ``refused``: another run holds the stack, so only a pass that updates
    nothing may end well."""
    previous = automation.placements(st)
    before = {r["workload"]: r for r in previous}
    due: Due | None = None
    note = ""
    if due_only:
        config = automation.stack_config(st)
        declared = [(w, config.provisioning_of(w)) for w in config.workloads]
        try:
            due = due_workloads(previous, declared, system_clock(st.workspace.env_vars))
        except (ValueError, KeyError, TypeError) as exc:  # a bad clock file or recorded row: named, as a full pass's
            raise GreenOpsError(f"stack {st.name}: cannot tell which workloads are due: {exc}") from None
        if not due:
            return Pass("nothing due, no update", [], upcoming(previous), previous, due=due)
        overlapping = automation.overlapping_names(due.names, [*before, *(w.name for w, _ in declared)])
        if not previous:  # a new stack: the platform, the providers and the stubs are created too
            due, note = None, "a full pass: the stack has no placements yet"
        elif overlapping:  # their targets would name other workloads' resources: this pass is a full one
            due = None
            note = f"a full pass: workload name(s) {', '.join(overlapping)} and another begin alike"
    if refused is not None:
        raise refused
    if due is not None:
        result = automation.up_due(st, due, previous, config, stream=stream)
    else:
        result = automation.run(st, "up", stream=stream)
    rows = automation.placements_in(result.outputs)
    after = {r["workload"]: r for r in rows}
    # None when the engine's summary has no resourceChanges: no counts rather than an AttributeError
    changed = sorted((result.summary.resource_changes or {}).items())
    counts = ", ".join(f"{k} {v}" for k, v in changed)
    resources = {str(getattr(k, "value", k)): v for k, v in changed}  # the operation's name, not the enum's
    entries = change_entries(before, after)
    if due is not None:
        counts = f"{due.summary()}: {counts}"
    elif note:
        counts = f"{note}: {counts}"
    return Pass(
        counts,
        lifecycle_changes(before, after),
        upcoming(rows),
        rows,
        transitions(before, after),
        resources,
        entries,
        due,
    )


def sleep_for(p: Pass | None, interval: timedelta, now: datetime) -> tuple[float, str]:
    """Until the next change when it comes before the next beat, else one interval."""
    if p and p.next_change and p.next_change[0] + WAKE_MARGIN - now < interval:
        wait = max(p.next_change[0] + WAKE_MARGIN - now, WAKE_MARGIN)
        return wait.total_seconds(), p.next_change[1]
    return interval.total_seconds(), "the interval"


PassObserver = Callable[[str, float, "Pass | None", datetime, str], None]
"""Told of every pass as it ends: its result (ok, failed, skipped), how long it took in seconds,
the pass (None unless ok), the platform's clock then and the kind of pass (full, due)
(greenops.engine.reconcile_stack_metrics)."""


def watch(
    run_pass: Callable[[], Pass],
    stack: str,
    interval: timedelta,
    stop: threading.Event,
    log: Callable[[str], None] = print,
    clock: Callable[[], datetime] = system_clock,
    observe: PassObserver | None = None,
    run_due: Callable[[], Pass] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> int:
    """Reconcile, log, sleep, repeat until ``stop`` is set (SIGTERM): a pass under way always
    finishes, so the stack is never left mid-update. A held lock or a failed pass is logged and
    tried again at the next wake-up: an unattended loop keeps going. With ``run_due``, a full pass
    runs once per ``interval`` (the beat: every VM's operator read, every setting applied) and a
    wake-up for a next change between beats runs ``run_due``, a pass of the due workloads, whose
    cost does not grow with the stack.

    The beat is kept on ``monotonic``, not on the platform's ``clock``: it is the loop's own cadence
    in elapsed time, so a clock that jumps (NTP, a clock file set by hand) neither starves the
    full passes nor runs them back to back."""
    passes = 0
    beat: float | None = None  # monotonic() when the next full pass is due: an interval after the last ended
    while not stop.is_set():
        now = clock()
        full = run_due is None or beat is None or monotonic() >= beat
        started = stamp(now)
        began = time.monotonic()
        result: Pass | None = None
        outcome = "ok"
        try:
            result = run_pass() if full else cast(Callable[[], Pass], run_due)()
            log(f"[{started}] " + result.summary(stack))
        except automation.StackLocked as exc:
            outcome = "skipped"
            log(f"[{started}] reconcile {stack}: skipped this pass: {exc}")
        except GreenOpsError as exc:
            outcome = "failed"
            log(f"[{started}] reconcile {stack}: pass failed, trying again at the next wake-up: {exc}")
        passes += 1
        # what ran: a due pass turns into a full one when its targets would be ambiguous
        ran_full = full if result is None else result.due is None
        if observe is not None:
            observe(outcome, time.monotonic() - began, result, clock(), "full" if ran_full else "due")
        now = clock()
        if ran_full:  # also when skipped or failed: retrying it at once would spin while a lock is held
            beat = monotonic() + interval.total_seconds()
        to_beat = timedelta(seconds=cast(float, beat) - monotonic())
        seconds, why = sleep_for(result, max(to_beat, WAKE_MARGIN), now)
        if stop.is_set():
            break
        log(f"sleeping {seconds:.0f} s (until {why})")
        stop.wait(seconds)
    log(f"reconcile {stack}: stopped after {passes} pass(es), between passes")
    return passes
