"""The recorded lifecycle: every transition, missed windows, operator verdicts, clocks that jump."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import stamp
from greenops.placing.failover import Failover
from greenops.placing.lifecycle import Lifecycle, Observation, Phase, Reported, Window, advance, from_outputs

T0 = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)
W = Window(start=T0, duration=timedelta(hours=2), lead=timedelta(minutes=5), deadline=T0 + timedelta(hours=10))
H, M = timedelta(hours=1), timedelta(minutes=1)


def placed() -> Lifecycle:
    return Lifecycle.placed(T0 - 10 * H, "placed: gcp/europe-west9 from 2027-01-10T03:00:00Z")


def observer(obs: Observation):
    calls = []

    def observe() -> Observation:
        calls.append(1)
        return obs

    observe.calls = calls  # type: ignore[attr-defined]
    return observe


def test_before_the_gate_nothing_moves_and_the_operator_is_not_asked():
    observe = observer(Observation(ready=True))
    step = advance(placed(), W, W.gate - M, observe)
    assert step.lifecycle == placed() and step.replace is None and observe.calls == []


def test_render_mode_runs_from_the_apply_and_retires_after_the_full_duration():
    applied_at = W.gate + M
    running = advance(placed(), W, applied_at).lifecycle
    assert running.phase is Phase.RUNNING and running.gate_opened_at == applied_at == running.running_since
    assert [e.phase for e in running.events] == [Phase.SCHEDULED, Phase.PROVISIONING, Phase.RUNNING]
    assert "readiness: applied" in running.reason
    # the run ends at its actual start + duration, not the scheduled start + duration
    assert advance(running, W, applied_at + 2 * H - M).lifecycle == running
    done = advance(running, W, applied_at + 2 * H).lifecycle
    assert done.phase is Phase.COMPLETED and done.completed_at == applied_at + 2 * H
    assert "ran 2h from 2027-01-10T02:56:00Z" in done.reason


def test_cluster_mode_waits_for_ready_and_takes_the_operators_transition_time():
    opened = advance(placed(), W, W.gate + M, observer(Observation(ready=False))).lifecycle
    assert opened.phase is Phase.PROVISIONING and opened.running_since is None
    waiting = advance(
        opened,
        W,
        T0 + M,
        observer(Observation(ready=False, detail="VirtualMachine x: Ready=False (Info, Reconciling)")),
    )
    assert waiting.lifecycle.phase is Phase.PROVISIONING and "Reconciling" in waiting.lifecycle.reason
    ready_at = T0 + 3 * M
    running = advance(
        waiting.lifecycle, W, T0 + 20 * M, observer(Observation(ready=True, ready_since=ready_at))
    ).lifecycle
    assert running.phase is Phase.RUNNING and running.running_since == ready_at
    # a transition time outside [gate opened, now] is not believed: the pass's own time is used
    odd = advance(opened, W, T0 + 20 * M, observer(Observation(ready=True, ready_since=T0 - 5 * H))).lifecycle
    assert odd.running_since == T0 + 20 * M
    # late start, full length: retired at ready + 2 h, not at the scheduled start + 2 h
    assert advance(running, W, T0 + 2 * H + M, observer(Observation(ready=True))).lifecycle.phase is Phase.RUNNING
    assert advance(running, W, ready_at + 2 * H, observer(Observation(ready=True))).lifecycle.phase is Phase.COMPLETED


def test_a_terminal_condition_fails_with_the_operators_message():
    opened = advance(placed(), W, W.gate, observer(Observation(ready=False))).lifecycle
    failed = advance(
        opened,
        W,
        T0,
        observer(
            Observation(ready=False, failure="VirtualMachine x: Ready=False (Error, SkuNotAvailable): no capacity")
        ),
    ).lifecycle
    assert failed.phase is Phase.FAILED and failed.failed_at == T0
    assert failed.reason == (
        "the operator reports a terminal error: VirtualMachine x: Ready=False (Error, SkuNotAvailable): no capacity"
    )


def test_objects_deleted_by_hand_while_running_fail_and_are_not_recreated():
    running = advance(
        advance(placed(), W, W.gate, observer(Observation(ready=False))).lifecycle,
        W,
        T0,
        observer(Observation(ready=True, ready_since=T0)),
    ).lifecycle
    gone = advance(running, W, T0 + H, observer(Observation(ready=False, missing=("VirtualMachine x",)))).lifecycle
    assert gone.phase is Phase.FAILED and "deleted outside the platform while Running: VirtualMachine x" in gone.reason


def test_never_ready_in_time_for_the_deadline_fails():
    opened = advance(placed(), W, W.gate, observer(Observation(ready=False))).lifecycle
    still = advance(opened, W, W.latest_start, observer(Observation(ready=False, detail="d"))).lifecycle
    assert still.phase is Phase.PROVISIONING
    late = advance(
        opened, W, W.latest_start + M, observer(Observation(ready=False, detail="Ready=False (Warning)"))
    ).lifecycle
    assert late.phase is Phase.FAILED
    assert late.reason.startswith(
        "not ready by 2027-01-10T11:00:00Z, the last start that meets its deadline 2027-01-10T13:00:00Z"
    )


def test_a_missed_window_with_room_asks_for_a_new_placement():
    step = advance(placed(), W, T0 + 3 * H)
    assert step.lifecycle == placed()  # nothing recorded yet: the provider places again, then records it
    assert step.replace == (
        "missed its window: the gate was due at 2027-01-10T02:55:00Z for the start "
        "2027-01-10T03:00:00Z, and no reconcile ran until 2027-01-10T06:00:00Z"
    )


def test_a_missed_window_past_its_deadline_fails_with_the_deadline_named():
    step = advance(placed(), W, W.latest_start + M)
    assert step.replace is None and step.lifecycle.phase is Phase.FAILED
    assert step.lifecycle.reason.endswith("the deadline 2027-01-10T13:00:00Z leaves no room for 2h any more")
    assert step.lifecycle.running_since is None and step.lifecycle.completed_at is None


def test_re_placement_keeps_the_history_and_counts():
    again = Lifecycle.placed(T0 + 3 * H, "re-placed: missed its window", earlier=placed())
    assert again.replacements == 1 and [e.reason for e in again.events][0].startswith("placed:")


@pytest.mark.parametrize("jump", [-timedelta(days=2), -3 * H, -M])
def test_a_clock_stepping_back_never_reopens_or_shortens(jump):
    running = advance(placed(), W, W.gate).lifecycle
    done = advance(running, W, W.gate + 2 * H).lifecycle
    assert advance(done, W, W.gate + 2 * H + jump).lifecycle == done  # terminal stays terminal
    assert advance(running, W, W.gate + jump).lifecycle == running  # running is not un-started
    sched = placed()
    assert advance(sched, W, T0 - 10 * H + jump).lifecycle == sched


def test_terminal_phases_do_not_call_the_operator():
    observe = observer(Observation(ready=True))
    failed = placed().to(Phase.FAILED, T0, "x", failed_at=T0)
    assert advance(failed, W, T0 + 5 * H, observe).lifecycle == failed and observe.calls == []


def test_the_document_round_trips_and_events_are_bounded():
    lc = placed()
    for i in range(40):
        lc = lc.to(Phase.PROVISIONING, T0 + i * M, f"step {i}")
    assert len(lc.events) == 20 and lc.events[-1].reason == "step 39"
    assert Lifecycle.from_document(lc.document()) == lc
    assert lc.document()["events"][-1]["at"] == "2027-01-10T03:39:00Z"


def test_state_from_an_earlier_version_is_read_once_from_its_status():
    assert from_outputs({"status": "Running"}, W).phase is Phase.RUNNING
    assert from_outputs({"status": "Completed"}, W).completed_at == T0 + 2 * H
    assert from_outputs({"status": "Scheduled"}, W).phase is Phase.SCHEDULED


def test_the_runs_own_report_ends_it_completed_or_failed_at_the_reported_time():
    running = advance(placed(), W, W.gate + M).lifecycle  # render mode: running from the apply
    since = running.running_since
    assert since is not None

    def reported(status: int, at: datetime) -> Window:
        return replace(W, reported=Reported(status, at))

    ok = advance(running, reported(0, since + 40 * M), since + 41 * M).lifecycle
    assert ok.phase is Phase.COMPLETED and ok.completed_at == since + 40 * M  # the real run time, not the pass
    assert (
        ok.reason
        == f"completed: its run reported exit status 0 at {stamp(since + 40 * M)}, having run 40m from {stamp(since)}"
    )
    bad = advance(running, reported(2, since + 5 * M), since + 6 * M).lifecycle
    assert bad.phase is Phase.FAILED and bad.failed_at == since + 5 * M
    assert "script exited with status 2" in bad.reason and "/var/log/greenops-run.log" in bad.reason
    # a report received past the duration's end is still the truth when the pass sees it first
    late = advance(running, reported(0, since + 2 * H + M), since + 2 * H + 2 * M).lifecycle
    assert late.phase is Phase.COMPLETED and late.completed_at == since + 2 * H + M
    # a report time the clock has not reached is not believed beyond the pass's own time
    ahead = advance(running, reported(0, since + 50 * M), since + 30 * M).lifecycle
    assert ahead.completed_at == since + 30 * M
    # a report while the operator still has not said ready: the run began at the gate, and ended
    opened = advance(placed(), W, W.gate + M, observer(Observation(ready=False))).lifecycle
    early = advance(opened, reported(0, W.gate + 30 * M), W.gate + 31 * M, observer(Observation(ready=False)))
    assert early.lifecycle.phase is Phase.COMPLETED and early.lifecycle.running_since == W.gate + M
    assert Reported.of({"exitStatus": 1, "reportedAt": "2027-01-10T04:00:00Z"}) == Reported(1, T0 + H)
    assert Reported.of(None) is None


FAILURE = Observation(ready=False, failure="VirtualMachine x: Ready=False (Error, SkuNotAvailable): no capacity")


def test_a_terminal_error_fails_over_while_an_attempt_and_the_deadline_leave_room():
    capped = replace(W, failover_cap=2)
    opened = advance(placed(), capped, W.gate, observer(Observation(ready=False))).lifecycle
    step = advance(opened, capped, T0, observer(FAILURE))
    assert step.lifecycle == opened  # nothing recorded yet: the provider records the new attempt
    assert step.failover == f"the operator reports a terminal error: {FAILURE.failure}"
    assert step.replace == f"failover: {step.failover}"
    # a running VM fails over too: its run starts again elsewhere
    running = advance(opened, capped, T0, observer(Observation(ready=True, ready_since=T0))).lifecycle
    assert advance(running, capped, T0 + H, observer(FAILURE)).failover is not None


def test_a_terminal_error_fails_once_the_attempts_or_the_deadline_run_out():
    capped = replace(W, failover_cap=1)
    opened = advance(placed(), capped, W.gate, observer(Observation(ready=False))).lifecycle
    spent = opened.model_copy(
        update={"failovers": (Failover(at=T0, region="gcp/europe-west9", zone="FR", phase="Running", reason="x"),)}
    )
    out = advance(spent, capped, T0, observer(FAILURE))
    assert out.replace is None and out.lifecycle.phase is Phase.FAILED
    assert out.lifecycle.reason.endswith("; no failover is left (1 of 1 made)")
    late = T0 + 8 * H + M  # two hours no longer fit before the deadline
    out = advance(opened, capped, late, observer(FAILURE))
    assert out.lifecycle.phase is Phase.FAILED
    assert out.lifecycle.reason.endswith(f"the deadline {stamp(W.deadline)} leaves no room for 2h elsewhere")


def test_without_a_failover_cap_a_terminal_error_fails_as_before():
    opened = advance(placed(), W, W.gate, observer(Observation(ready=False))).lifecycle
    out = advance(opened, W, T0, observer(FAILURE))
    assert out.failover is None and out.lifecycle.phase is Phase.FAILED
    assert out.lifecycle.reason == f"the operator reports a terminal error: {FAILURE.failure}"


def test_an_edit_by_hand_is_recorded_each_time_it_is_restored_and_once_when_left():
    edited = Observation(
        ready=True, ready_since=T0, drift=("VirtualMachine x: spec.hardwareProfile.vmSize is 'B', declared 'A'",)
    )
    running = advance(
        advance(placed(), W, W.gate, observer(Observation(ready=False))).lifecycle,
        W,
        T0,
        observer(Observation(ready=True, ready_since=T0)),
    ).lifecycle
    assert running.drift == ()
    once = advance(running, W, T0 + H, observer(edited)).lifecycle
    assert once.phase is Phase.RUNNING and [(d.found, d.restored) for d in once.drift] == [(edited.drift, True)]
    again = advance(once, W, T0 + H + M, observer(edited)).lifecycle  # found again: re-applied again
    assert len(again.drift) == 2
    left = replace(W, restore_drift=False)
    kept = advance(running, left, T0 + H, observer(edited)).lifecycle
    assert [d.restored for d in kept.drift] == [False]
    assert advance(kept, left, T0 + H + M, observer(edited)).lifecycle == kept  # the same edit: recorded once
