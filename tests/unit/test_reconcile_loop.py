"""The unattended loop's control flow: when it wakes, what it skips, how it stops. (The passes
themselves run the real engine in tests/provider and tests/e2e.)"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.errors import GreenOpsError
from greenops.engine import automation
from greenops.engine.reconcile_stack import (
    Pass,
    oldest_overdue_gate,
    parse_interval,
    sleep_for,
    transitions,
    upcoming,
    watch,
)
from greenops.stack.stack_config import StackConfigError, parse_stack_config

NOW = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)


@pytest.mark.parametrize("text, seconds", [("5m", 300), ("30s", 30), ("1h30m", 5400), ("2h", 7200)])
def test_intervals(text, seconds):
    assert parse_interval(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["5", "", "5 minutes", "0m", "-5m"])
def test_bad_intervals_are_named(text):
    with pytest.raises(GreenOpsError, match="interval"):
        parse_interval(text)


def rows(*items):
    return [{"workload": w, "phase": phase, "nextChangeAt": at} for w, phase, at in items]


def test_the_next_change_is_the_earliest_with_what_happens():
    got = upcoming(
        rows(
            ("a", "Running", "2027-01-10T05:00:00Z"),
            ("b", "Scheduled", "2027-01-10T04:55:00Z"),
            ("c", "Completed", None),
        )
    )
    assert got == (datetime(2027, 1, 10, 4, 55, tzinfo=UTC), "b: gate opens")
    assert upcoming(rows(("c", "Failed", None))) is None


def test_it_wakes_at_the_next_change_when_that_comes_before_the_beat():
    p = Pass("same 3", [], (NOW + timedelta(minutes=2), "b: gate opens"))
    assert sleep_for(p, timedelta(minutes=5), NOW) == (121.0, "b: gate opens")
    assert sleep_for(p, timedelta(minutes=1), NOW) == (60.0, "the interval")
    overdue = Pass("same 3", [], (NOW - timedelta(minutes=2), "a: run ends"))
    assert sleep_for(overdue, timedelta(minutes=5), NOW)[0] == 1.0  # never a busy loop
    assert sleep_for(None, timedelta(minutes=5), NOW) == (300.0, "the interval")


def test_a_held_lock_or_a_failed_pass_is_logged_and_the_loop_goes_on_until_stopped():
    stop, log = threading.Event(), []
    outcomes = [
        automation.StackLocked("stack s is being updated by another run (its lock is held)"),
        GreenOpsError("OPA at http://x did not answer"),
        Pass("same 2", ["started   a: running"], None),
    ]

    def run_pass():
        out = outcomes.pop(0)
        if isinstance(out, Exception):
            raise out
        stop.set()  # SIGTERM arrives during the third pass: it still finishes and is logged
        return out

    observed = []
    passes = watch(
        run_pass,
        "s",
        timedelta(seconds=0.01),
        stop,
        log=log.append,
        clock=lambda: NOW,
        observe=lambda result, seconds, p, now, kind: observed.append((result, p is not None, now)),
    )
    assert passes == 3 and outcomes == []
    assert observed == [("skipped", False, NOW), ("failed", False, NOW), ("ok", True, NOW)]
    assert "skipped this pass: stack s is being updated by another run (its lock is held)" in log[0]
    assert "pass failed, trying again at the next wake-up: OPA at http://x did not answer" in log[2]
    assert "started   a: running" in log[4] and log[-1] == "reconcile s: stopped after 3 pass(es), between passes"


def test_a_lead_shorter_than_interval_plus_margin_is_refused_naming_both():
    with pytest.raises(StackConfigError) as info:
        parse_stack_config(
            {
                "endpoints": {"provisioningLeadSeconds": 300},
                "reconcile": {"intervalSeconds": 600, "provisioningMarginSeconds": 120},
            }
        )
    assert str(info.value) == (
        "greenops:endpoints.provisioningLeadSeconds: 300 s is shorter than greenops:reconcile.intervalSeconds (600 s) "
        "plus provisioningMarginSeconds (120 s): a gate could open after its start; set it to at least 720 or "
        "reconcile more often"
    )
    assert parse_stack_config({"reconcile": {"intervalSeconds": 600}}).lead_seconds == 660  # derived when unset
    assert parse_stack_config({}).lead_seconds == 300


def test_the_file_backends_lock_race_is_a_held_lock_not_a_failure():
    from greenops.engine.stack_lock import lock_race

    seen_in_ci = (
        "code: 1\n stderr: error: could not list bucket: blob (code=NotFound): lstat /tmp/x/state/.pulumi/"
        "locks/organization/greenops-platform/days/8cc7e20d.json.18ea4c522240dd93.tmp: no such file or directory"
    )
    assert lock_race(seen_in_ci)
    # the read of a listed lock file that was renamed into place (CI, issue 49) or deleted meanwhile,
    # or of a temporary one still empty: each as the pinned CLI said it
    renamed = (
        "error: 2 errors occurred:\n    1) stat /tmp/x/state/.pulumi/locks/organization/greenops-platform/lifecycle/"
        "c7627045-fc3f-484a-be57-ac2a1450576f.json.18ec6c9c0740fb8e.tmp: no such file or directory\n    2) NotFound"
    )
    deleted = (
        "error: 2 errors occurred:\n    1) stat /tmp/r/state/.pulumi/locks/organization/greenops-race/race/"
        "9dde1a84-8e8c-4a9e-bbf6-ea8972980f50.json: no such file or directory\n    2) NotFound"
    )
    empty = "\n code: 1\n stdout: \n stderr: error: unexpected end of JSON input\n"
    assert lock_race(renamed) and lock_race(deleted) and lock_race(empty)
    # a JSON error anywhere else, after the operation began, is the operation's own failure
    assert not lock_race("\n code: 1\n stdout: Updating (dev)\n stderr: error: unexpected end of JSON input\n")
    assert not lock_race("error: could not list bucket: permission denied on /srv/state/.pulumi/stacks")
    assert not lock_race("error: update failed: workload 'etl' was not placed")
    assert not lock_race("error: open /srv/state/.pulumi/stacks/greenops-platform/dev.json: no such file or directory")


def event(minute: int, phase: str, reason: str = "") -> dict:
    return {"at": f"2027-01-10T03:{minute:02d}:00Z", "phase": phase, "reason": reason or phase}


def test_transitions_by_kind_and_which_were_missed_windows():
    placed, gate, running = event(0, "Scheduled"), event(5, "Provisioning"), event(5, "Running")
    before = {
        "late": {"events": [placed]},
        "too-late": {"events": [placed]},
        "edited": {"events": [placed, gate, running]},
        "not-ready": {"events": [placed, gate]},
    }
    after = {
        "late": {"events": [placed, event(9, "Scheduled", "re-placed: missed"), event(9, "Provisioning"), running]},
        "too-late": {"events": [placed, event(9, "Failed", "missed its window; no room")]},
        # a changed spec is a new placement with a fresh record: placed again, no window missed
        "edited": {"events": [event(9, "Scheduled", "placed")]},
        "not-ready": {"events": [placed, gate, event(9, "Failed", "not ready by its last start")]},
        "new": {"events": [event(9, "Scheduled", "placed"), event(9, "Provisioning"), event(9, "Running")]},
    }
    got = [(t.workload, t.kind, t.missed) for t in transitions(before, after)]
    assert got == [
        ("late", "re-placed", True),
        ("late", "gate", False),
        ("late", "started", False),
        ("too-late", "failed", True),
        ("edited", "re-placed", False),
        ("not-ready", "failed", False),
        ("new", "gate", False),  # a new row's first event is its placement, not a transition
        ("new", "started", False),
    ]


def test_the_oldest_overdue_gate_is_of_rows_still_scheduled():
    rows = [
        {"workload": "a", "phase": "Scheduled", "nextChangeAt": "2027-01-10T02:50:00Z"},
        {"workload": "b", "phase": "Scheduled", "nextChangeAt": "2027-01-10T02:58:00Z"},
        {"workload": "c", "phase": "Scheduled", "nextChangeAt": "2027-01-10T03:10:00Z"},  # ahead
        {"workload": "d", "phase": "Provisioning", "nextChangeAt": "2027-01-10T01:00:00Z"},  # its gate opened
        {"workload": "e", "phase": "Completed", "nextChangeAt": None},
    ]
    assert oldest_overdue_gate(rows, NOW) == timedelta(minutes=10)
    assert oldest_overdue_gate(rows[2:], NOW) == timedelta(0)
