"""The Placement's side of direct mode, driven directly with the real OPA and scheduler on loopback:
it takes the program's verdict at the program's instant, refuses a verdict reached from another
record, and will not switch a running workload between modes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.direct.records import verdict
from greenops.models import Workload
from greenops.provider.placement import PlacementProvider
from tests.support import loopback
from tests.support.common import AZURE_SUBSCRIPTION, require_tool
from tests.support.common import SSH_KEY as KEY

pytestmark = pytest.mark.integration
LEAD = timedelta(seconds=300)


@pytest.fixture(scope="module")
def servers():
    require_tool("opa")
    with loopback.servers() as (scheduler, opa):
        scheduler.stack_token = scheduler.issue("direct-unit", ["default"], paths=["pulumi"])
        yield opa, scheduler


def base_props(servers, now: datetime) -> dict:
    opa, scheduler = servers
    return {
        "workload": {
            "name": "etl",
            "cpu": 2,
            "memory": 4,
            "duration": "1h",
            "deadline": stamp(now + timedelta(hours=1, minutes=2)),  # due at once
            "originRegion": "westeurope",
            "eligibleProviders": ["aws"],
            "region": "eu-north-1",
        },
        "opaUrl": opa.url,
        "opaToken": opa.query_token,
        "schedulerUrl": scheduler.url,
        "schedulerToken": scheduler.stack_token,
        "timeoutSeconds": 5,
        "attempts": 2,
        "leadSeconds": LEAD.total_seconds(),
        "render": {"sshPublicKey": KEY, "azureSubscriptionId": AZURE_SUBSCRIPTION},
        "stack": "direct-unit",
    }


def direct(props: dict, record: dict | None, at: datetime) -> dict:
    """``props`` in direct mode with the program's verdict on ``record`` at ``at``."""
    w = Workload.model_validate(props["workload"], context={"check_deadline": False})
    return {**props, "provisioning": "direct", "direct": verdict(w, record, LEAD, at).props()}


def as_record(outs: dict, machine: dict | None = None) -> dict:
    from greenops.direct.records import record_of

    found = record_of(outs, machine)
    assert found is not None
    return found.model_dump()


def test_placed_due_at_once_waits_a_pass_then_runs_from_the_declaring_pass(servers):
    now = datetime.now(UTC).replace(microsecond=0)
    provider = PlacementProvider(clock=lambda: now)
    props = base_props(servers, now)
    created = provider.create(direct(props, None, now)).outs
    assert created["phase"] == "Provisioning"  # the gate is open, the VM waits for the record
    assert created["nextChangeAt"] == stamp(now)  # so the next pass is due at once
    assert created["manifests"] == []  # nothing for an operator
    assert "declared on the next pass" in created["lifecycle"]["reason"]

    # The next pass declares the VM; the record waits for it to exist.
    later = now + timedelta(minutes=1)
    news = direct(props, as_record(created), later)
    assert news["direct"]["declared"] is True
    assert provider.diff("id", created, news).changes
    creating = provider.update("id", created, news).outs
    assert creating["phase"] == "Provisioning" and creating["lifecycle"]["reason"].startswith("waiting for the VM")

    # The pass after finds the VM that pass created: Running since then (the program's instant).
    vm = {"resourceId": "i-0abc", "privateIp": "10.0.1.9", "since": stamp(later)}
    running = provider.update("id", creating, direct(props, as_record(creating, vm), later + timedelta(minutes=1))).outs
    assert running["phase"] == "Running" and running["lifecycle"]["runningSince"] == stamp(later)
    assert "the VM exists since" in running["lifecycle"]["reason"]
    assert "basis" not in running["direct"]  # the verdict's record is not kept twice

    # A verdict reached from the earlier record is refused, in diff (so in preview) as in update.
    stale = direct(props, as_record(creating, vm), later + timedelta(minutes=2))
    for call in (provider.diff, provider.update):
        with pytest.raises(GreenOpsError, match=r"record as Provisioning, but the placement's own says Running"):
            call("id", running, stale)

    # The run's hour is up: the verdict retires the VM, and the record says Completed.
    end = later + timedelta(hours=1)
    done = provider.update("id", running, direct(props, as_record(running, vm), end)).outs
    assert done["phase"] == "Completed" and done["lifecycle"]["completedAt"] == stamp(end)


def test_no_vm_by_the_last_start_fails_and_is_not_declared(servers):
    now = datetime.now(UTC).replace(microsecond=0)
    provider = PlacementProvider(clock=lambda: now)
    props = base_props(servers, now)  # 1 h to run, 2 min of slack: the last start is now + 2 min
    created = provider.create(direct(props, None, now)).outs
    late = direct(props, as_record(created), now + timedelta(minutes=3))
    assert late["direct"]["declared"] is False
    failed = provider.update("id", created, late).outs
    assert failed["phase"] == "Failed" and "not ready by" in failed["lifecycle"]["reason"]


def test_a_vm_gone_from_the_state_while_running_fails_and_is_not_recreated(servers):
    now = datetime.now(UTC).replace(microsecond=0)
    provider = PlacementProvider(clock=lambda: now)
    props = base_props(servers, now)
    created = provider.create(direct(props, None, now)).outs
    creating = provider.update("id", created, direct(props, as_record(created), now)).outs
    vm = {"resourceId": "i-0abc", "privateIp": "10.0.1.9", "since": stamp(now)}
    running = provider.update("id", creating, direct(props, as_record(creating, vm), now)).outs
    assert running["phase"] == "Running"
    gone = direct(props, as_record(running, {"gone": "i-0abc"}), now + timedelta(minutes=5))
    assert gone["direct"]["declared"] is False
    failed = provider.update("id", running, gone).outs
    assert (
        failed["phase"] == "Failed"
        and "deleted outside the platform while Running: the VM i-0abc" in (failed["lifecycle"]["reason"])
    )


def test_a_running_workload_keeps_its_mode_until_the_run_ends(servers):
    now = datetime.now(UTC).replace(microsecond=0)
    provider = PlacementProvider(clock=lambda: now)
    props = base_props(servers, now)
    running = provider.create(props).outs  # operator mode, render-style readiness: running at once
    assert running["phase"] == "Running"
    switched = direct(props, as_record(running), now + timedelta(minutes=1))
    with pytest.raises(GreenOpsError, match="its provisioning cannot change from operator to direct"):
        provider.diff("id", running, switched)
    # A direct workload whose VM was not declared yet may still switch.
    held = provider.create(direct({**props, "stack": "switch"}, None, now)).outs
    assert held["phase"] == "Provisioning"
    assert provider.diff("id", held, {**props, "stack": "switch"}).changes is not None


def test_a_vm_declared_for_a_placement_that_does_not_exist_is_refused(servers):
    """The stack's outputs still hold a record of a placement removed from the state."""
    now = datetime.now(UTC).replace(microsecond=0)
    provider = PlacementProvider(clock=lambda: now)
    props = base_props(servers, now)
    placed = provider.create(direct(props, None, now)).outs
    orphan = direct({**props, "stack": "other"}, as_record(placed), now + timedelta(minutes=1))
    assert orphan["direct"]["declared"] is True
    with pytest.raises(GreenOpsError, match="the state has no placement of it"):
        provider.create(orphan)
