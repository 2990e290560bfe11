"""A workload with a run ends when its VM powers itself off: each operator's word for a stopped VM,
and the lifecycle that records Completed at the pass that sees it, not at the end of the duration."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from greenops.placing.lifecycle import Lifecycle, Observation, Phase, Window, advance
from greenops.placing.observe import verdict
from greenops.renderers import object_state

T0 = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)
RUNS = Window(T0, timedelta(hours=6), timedelta(minutes=5), T0 + timedelta(hours=12), ends_itself=True)
M = timedelta(minutes=1)
READY = {"type": "Ready", "status": "True", "lastTransitionTime": "2027-01-10T03:02:00Z"}
SYNCED = {"type": "ACK.ResourceSynced", "status": "True", "lastTransitionTime": "2027-01-10T03:02:00Z"}


def vm(provider: str, stopped: bool) -> dict:
    """The VM object as its operator reports it, powered on or off."""
    if provider == "azure":
        power = "PowerState/stopped" if stopped else "PowerState/running"
        status = {
            "conditions": [READY],
            "instanceView": {"statuses": [{"code": "ProvisioningState/succeeded"}, {"code": power}]},
        }
        return {"kind": "VirtualMachine", "metadata": {"name": "etl"}, "status": status}
    if provider == "gcp":
        status = {"conditions": [READY], "currentStatus": "TERMINATED" if stopped else "RUNNING"}
        return {"kind": "ComputeInstance", "metadata": {"name": "etl"}, "status": status}
    status = {
        "conditions": [SYNCED],
        "state": {"code": 80 if stopped else 16, "name": "stopped" if stopped else "running"},
    }
    return {"kind": "Instance", "metadata": {"name": "etl"}, "status": status}


@pytest.mark.parametrize("provider", ["azure", "gcp", "aws"])
def test_each_operators_stopped_vm_is_seen(provider):
    assert object_state(provider, vm(provider, stopped=True)).stopped
    assert not object_state(provider, vm(provider, stopped=False)).stopped
    assert verdict(provider, [vm(provider, stopped=True)]).stopped


def running() -> Lifecycle:
    since = T0 + 2 * M
    placed = Lifecycle.placed(T0 - timedelta(hours=1), "placed")
    return placed.to(Phase.PROVISIONING, T0 - 5 * M, "gate opened", gate_opened_at=T0 - 5 * M).to(
        Phase.RUNNING, since, "running", running_since=since
    )


def test_a_run_that_powers_its_vm_off_is_completed_when_a_pass_sees_it():
    seen = T0 + timedelta(minutes=47)
    step = advance(running(), RUNS, seen, lambda: Observation(ready=True, stopped=True))
    done = step.lifecycle
    assert done.phase is Phase.COMPLETED and done.completed_at == seen  # long before the 6 h bound
    assert "powered itself off" in done.reason and "45 min after it started at 2027-01-10T03:02:00Z" in done.reason


def test_a_vm_still_on_keeps_running_and_the_duration_still_bounds_the_run():
    assert advance(running(), RUNS, T0 + timedelta(hours=1), lambda: Observation(ready=True)).lifecycle == running()
    end = advance(running(), RUNS, T0 + timedelta(hours=7), lambda: Observation(ready=True)).lifecycle
    assert end.phase is Phase.COMPLETED and end.reason.startswith("completed: ran 6h")


def test_without_a_run_a_stopped_vm_is_not_an_end():
    nothing_to_run = replace(RUNS, ends_itself=False)
    step = advance(running(), nothing_to_run, T0 + timedelta(hours=1), lambda: Observation(ready=True, stopped=True))
    assert step.lifecycle == running()


def test_a_short_run_over_before_any_pass_saw_it_running_is_completed_at_once():
    provisioning = Lifecycle.placed(T0 - timedelta(hours=1), "placed").to(
        Phase.PROVISIONING, T0 - 5 * M, "gate opened", gate_opened_at=T0 - 5 * M
    )
    seen = T0 + 30 * M
    ready_since = T0 + 2 * M
    done = advance(provisioning, RUNS, seen, lambda: Observation(ready=True, ready_since=ready_since, stopped=True))
    assert done.lifecycle.phase is Phase.COMPLETED
    assert done.lifecycle.running_since == ready_since and done.lifecycle.completed_at == seen
