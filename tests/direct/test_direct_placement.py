"""The Placement's side of direct mode, driven directly with the real OPA and scheduler on loopback:
it takes the program's verdict at the program's instant, refuses a verdict reached from another
record, and will not switch a running workload between modes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.clock import stamp
from greenops.direct.records import verdict
from greenops.errors import GreenOpsError
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.models import Workload
from greenops.provider.placement import PlacementProvider
from tests.conftest import AZURE_SUBSCRIPTION, require_tool

pytestmark = pytest.mark.integration
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"
LEAD = timedelta(seconds=300)


@pytest.fixture(scope="module")
def servers():
    require_tool("opa")
    with SchedulerServer() as scheduler, OpaServer(scheduler_url=scheduler.url) as opa:
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
        "schedulerUrl": scheduler.url,
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


def as_record(outs: dict) -> dict:
    from greenops.direct.records import record_of

    found = record_of(outs)
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

    later = now + timedelta(minutes=1)
    news = direct(props, as_record(created), later)
    assert news["direct"]["declared"] is True
    assert provider.diff("id", created, news).changes
    updated = provider.update("id", created, news).outs
    assert updated["phase"] == "Running"
    assert updated["lifecycle"]["runningSince"] == stamp(later)  # the program's instant, not the provider's clock
    assert "declared in this pass" in updated["lifecycle"]["reason"]

    # A verdict reached from the earlier record is refused, in diff (so in preview) as in update.
    stale = direct(props, as_record(created), later + timedelta(minutes=1))
    for call in (provider.diff, provider.update):
        with pytest.raises(GreenOpsError, match=r"read the placement as Provisioning, but its record says Running"):
            call("id", updated, stale)

    # The run's hour is up: the verdict retires the VM, and the record says Completed.
    end = later + timedelta(hours=1)
    done = provider.update("id", updated, direct(props, as_record(updated), end)).outs
    assert done["phase"] == "Completed" and done["lifecycle"]["completedAt"] == stamp(end)


def test_a_running_workload_keeps_its_mode_until_the_run_ends(servers):
    now = datetime.now(UTC).replace(microsecond=0)
    provider = PlacementProvider(clock=lambda: now)
    props = base_props(servers, now)
    running = provider.create(props).outs  # operator mode, render-style readiness: running at once
    assert running["phase"] == "Running"
    switched = direct(props, as_record(running), now + timedelta(minutes=1))
    with pytest.raises(GreenOpsError, match="its provisioning cannot change from operator to direct"):
        provider.diff("id", running, switched)


def test_a_record_without_its_placement_is_refused(servers):
    """A verdict reached from a record when there is no placement (its state was removed) is refused."""
    now = datetime.now(UTC).replace(microsecond=0)
    provider = PlacementProvider(clock=lambda: now)
    props = base_props(servers, now)
    placed = provider.create(direct(props, None, now)).outs
    with pytest.raises(GreenOpsError, match="read the placement as Provisioning, but its record says no record"):
        provider.create(direct({**props, "stack": "other"}, as_record(placed), now))
