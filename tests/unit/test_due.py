"""Which workloads a pass of the due workloads registers (greenops.placing.due), and how the
watch loop alternates full passes on its beat with due passes between them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from greenops.common.clock import stamp
from greenops.engine.automation import overlapping_names
from greenops.engine.reconcile_stack import Pass, watch
from greenops.models import Provisioning, Workload
from greenops.placing.due import DUE_AHEAD, Due, declaration_digest, due_workloads

NOW = datetime(2027, 1, 10, 18, 0, tzinfo=UTC)
OPERATOR, DIRECT = Provisioning.OPERATOR, Provisioning.DIRECT


def job(name: str, **fields) -> Workload:
    spec = {"name": name, "cpu": 2, "memory": 4, "duration": "1h", "deadline": "2027-01-12T00:00:00Z"}
    return Workload.model_validate({**spec, "originRegion": "westeurope", **fields}, context={"now": NOW})


def row(w: Workload, phase: str, change: datetime | None, objects: bool = False, mode=OPERATOR) -> dict:
    return {
        "workload": w.name,
        "phase": phase,
        "nextChangeAt": stamp(change) if change else None,
        "spec": declaration_digest(w, mode),
        "objects": objects,
    }


def test_each_reason_a_workload_is_due_and_nothing_else_is():
    far, soon = NOW + timedelta(hours=3), NOW + DUE_AHEAD - timedelta(seconds=1)
    ws = {n: job(n) for n in ("waiting", "gate", "ends", "running", "provisioning", "done", "ended", "edited", "new")}
    rows = [
        row(ws["waiting"], "Scheduled", far),
        row(ws["gate"], "Scheduled", soon),
        row(ws["ends"], "Running", NOW - timedelta(seconds=5), objects=True),
        row(ws["running"], "Running", far, objects=True),
        row(ws["provisioning"], "Provisioning", far, objects=True),
        row(ws["done"], "Completed", None),
        row(ws["ended"], "Completed", None, objects=True),  # the pass that recorded the end kept its group
        row(job("edited", cpu=4), "Scheduled", far),
        {"workload": "gone", "phase": "Scheduled", "nextChangeAt": stamp(far), "spec": "x", "objects": False},
    ]
    due = due_workloads(rows, [(w, OPERATOR) for w in ws.values()], NOW)
    assert due.declared == {
        "gate": "next change reached",
        "ends": "next change reached",
        "provisioning": "awaiting its operator",
        "ended": "objects to remove",
        "edited": "declaration changed",
        "new": "new",
    }
    assert due.removed == {"gone": "no longer declared"}
    assert due.summary().startswith("due 7 (2 next change reached, ")


def test_a_row_from_before_rows_carried_a_digest_is_due_once_and_the_mode_is_part_of_the_declaration():
    w = job("etl")
    old = {"workload": "etl", "phase": "Running", "nextChangeAt": stamp(NOW + timedelta(hours=1))}
    assert due_workloads([old], [(w, OPERATOR)], NOW).declared == {"etl": "declaration changed"}
    # switching to direct provisioning changes its resources, so it is due; a direct row has no group
    assert due_workloads([row(w, "Running", NOW + timedelta(hours=1), True)], [(w, DIRECT)], NOW)
    direct = row(w, "Running", NOW + timedelta(hours=1), mode=DIRECT)
    assert not due_workloads([direct], [(w, DIRECT)], NOW)


def test_targets_that_would_name_another_workloads_resources_are_found():
    assert overlapping_names({"etl", "web"}, {"etl", "etl-nightly", "web", "db"}) == ["etl"]
    # either way round: etl-nic's targets name etl's network interface (etl-nic), etl-placement its Placement
    assert overlapping_names({"etl-nic", "etl-placement"}, {"etl", "etl-nic", "etl-placement"}) == [
        "etl-nic",
        "etl-placement",
    ]
    assert overlapping_names({"web", "webapp"}, {"web", "webapp", "db"}) == ["web", "webapp"]
    assert overlapping_names({"web", "db"}, {"web", "db", "cache"}) == []


class Sleeps(threading.Event):
    """The loop's stop event for a test: its sleep moves the test's clock (``advance`` by the
    seconds asked) instead of waiting, and it is set when ``stop`` is."""

    def __init__(self, stop: threading.Event, advance: Callable[[float], None]):
        super().__init__()
        self.stop, self.advance = stop, advance

    def wait(self, timeout: float | None = None) -> bool:
        self.advance(timeout or 0)
        return self.stop.is_set()

    def is_set(self) -> bool:
        return self.stop.is_set()


def advancing(cell: list) -> Callable[[float], None]:
    """Moves a test's clock, an instant or elapsed seconds held in ``cell[0]``, by a sleep's seconds."""

    def advance(seconds: float) -> None:
        cell[0] += timedelta(seconds=seconds) if isinstance(cell[0], datetime) else seconds

    return advance


def due_if(kind: str) -> Due | None:
    """What a pass reports it ran as: a due pass names its due workloads; a full pass, None."""
    return Due({"etl": "next change reached"}, {}) if kind == "due" else None


def test_the_watch_loop_runs_a_full_pass_on_its_beat_and_due_passes_between():
    clock = [NOW]
    ran: list[str] = []
    stop = threading.Event()

    def one(kind: str) -> Pass:
        ran.append(kind)
        clock[0] += timedelta(seconds=10)  # each pass takes 10 s of the clock
        if len(ran) == 5:
            stop.set()
        return Pass("", [], (clock[0] + timedelta(seconds=20), "a gate opens"), due=due_if(kind))

    watch(
        lambda: one("full"),
        "s",
        timedelta(seconds=75),
        Sleeps(stop, advancing(clock)),
        log=lambda _line: None,
        clock=lambda: clock[0],
        run_due=lambda: one("due"),
        monotonic=lambda: clock[0].timestamp(),
    )
    assert ran == ["full", "due", "due", "full", "due"]


def test_a_full_pass_longer_than_the_interval_still_leaves_room_for_due_passes():
    """The beat counts from when a full pass ended: a stack whose full pass outlasts the interval
    still runs due passes between its full ones, not full passes back to back."""
    clock = [NOW]
    ran: list[str] = []
    stop = threading.Event()

    def one(kind: str, seconds: int) -> Pass:
        ran.append(kind)
        clock[0] += timedelta(seconds=seconds)
        if len(ran) == 4:
            stop.set()
        return Pass("", [], (clock[0] + timedelta(seconds=5), "a gate opens"), due=due_if(kind))

    watch(
        lambda: one("full", 100),
        "s",
        timedelta(seconds=75),
        Sleeps(stop, advancing(clock)),
        log=lambda _line: None,
        clock=lambda: clock[0],
        run_due=lambda: one("due", 2),
        monotonic=lambda: clock[0].timestamp(),
    )
    assert ran == ["full", "due", "due", "due"]


def test_the_beat_is_elapsed_time_so_a_frozen_or_jumping_platform_clock_still_gets_full_passes():
    """The platform's clock can stand still (a clock file) or jump back (NTP): the beat is the
    loop's own cadence, so the full pass still comes once per interval of elapsed time."""
    elapsed = [0.0]
    ran: list[str] = []
    stop = threading.Event()

    def one(kind: str) -> Pass:
        ran.append(kind)
        elapsed[0] += 10  # each pass takes 10 s; the platform's clock does not move
        if len(ran) == 4:
            stop.set()
        return Pass("", [], (NOW + timedelta(seconds=20), "a gate opens"), due=due_if(kind))

    watch(
        lambda: one("full"),
        "s",
        timedelta(seconds=75),
        Sleeps(stop, advancing(elapsed)),
        log=lambda _line: None,
        clock=lambda: NOW,
        run_due=lambda: one("due"),
        monotonic=lambda: elapsed[0],
    )
    assert ran == ["full", "due", "due", "full"]


def test_a_due_pass_that_ran_as_a_full_one_moves_the_beat_and_is_counted_as_full():
    """Overlapping names turn a due pass into a full one: that pass is the beat's, so the next
    full pass is an interval later, not seconds later; the observer is told what ran."""
    elapsed = [0.0]
    ran: list[str] = []
    told: list[tuple[str, str]] = []
    stop = threading.Event()

    def one(kind: str, due: Due | None) -> Pass:
        ran.append(kind)
        elapsed[0] += 10
        if len(ran) == 4:
            stop.set()
        return Pass("", [], (NOW + timedelta(seconds=20), "a gate opens"), due=due)

    # the first wake-up's due pass falls back to a full one (due=None), a few seconds before the beat
    fallbacks = iter([None])
    watch(
        lambda: one("full", None),
        "s",
        timedelta(seconds=75),
        Sleeps(stop, advancing(elapsed)),
        log=lambda _line: None,
        clock=lambda: NOW,
        observe=lambda result, seconds, p, now, kind: told.append((result, kind)),
        run_due=lambda: one("due", next(fallbacks, Due({"etl": "a gate opens"}, {}))),
        monotonic=lambda: elapsed[0],
    )
    # the beat was due at 85 s; the fallback full pass ending at 41 s moves it to 116 s, so the
    # passes at 62 s and 93 s are due passes (without the move, the one at 85 s would be full again)
    assert ran == ["full", "due", "due", "due"]
    assert [kind for _, kind in told] == ["full", "full", "due", "due"]
