"""Placement and the scheduler's queue, against a real OPA and a real scheduler on loopback: a workload
whose tenant's quota is used up is created Pending (the update succeeds, with its position and
reason, and no objects), each pass asks again, and once a release frees the quota the queue admits
it and the next pass places it as any other; its delete while it waits withdraws it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import parse_time, set_clock_file, stamp
from greenops.provider.placement import PlacementProvider, reservation_key
from tests.provider.test_placement_provider import Clock, placement_servers, props

pytestmark = pytest.mark.integration

TENANT = "research"  # its quota is 256 vCPU in the packaged policy settings


@pytest.fixture
def servers(tmp_path):
    clock = tmp_path / "scheduler-clock"  # the scheduler's clock, which a test moves with the pass's
    set_clock_file(clock, datetime.now(UTC))
    env = {"GREENOPS_SCHEDULER_QUEUE_SECONDS": "0", "GREENOPS_CLOCK_FILE": str(clock)}
    with placement_servers(scheduler={"env": env}) as both:
        opa, scheduler = both
        scheduler.stack_token = scheduler.issue("research-stack", [TENANT], paths=["pulumi"])
        scheduler.clock_file = clock
        yield both


def same_clock(scheduler) -> Clock:
    """The pass's clock, at the scheduler's instant."""
    clock = Clock()
    clock.now = parse_time(scheduler.clock_file.read_text().strip())
    return clock


def fill_quota(scheduler, clock: Clock) -> tuple[str, str]:
    """An API booking of the tenant's whole quota: every Pulumi-path booking of it must wait."""
    token = scheduler.issue("research-api", [TENANT], paths=["api"])
    body = {
        "key": "research/big",
        "eligible_regions": ["FR"],
        "deadline": stamp(clock.now.replace(microsecond=0) + timedelta(days=3)),
        "duration": 4,
        "cpu": 256,
        "memory": 512,
    }
    r = httpx.post(f"{scheduler.url}/scheduling", json=body, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    return token, body["key"]


def row(scheduler, key: str) -> dict:
    r = httpx.get(f"{scheduler.url}/reservations/{key}", params={"tenant": TENANT}, headers=scheduler.admin_headers)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_workload_over_its_quota_waits_pending_and_is_placed_once_admitted(servers):
    _, scheduler = servers
    clock = same_clock(scheduler)
    provider = PlacementProvider(clock)
    token, big = fill_quota(scheduler, clock)
    p = props(servers, tenant=TENANT) | {"stack": "dev"}
    key = reservation_key(p)

    waiting = provider.create(p).outs  # the update succeeds: the workload waits
    assert waiting["phase"] == "Pending" and waiting["decision"] is None and waiting["manifests"] == []
    assert waiting["reservation"] == {"key": key, "phase": "Pending", "position": 1, "priorityClass": "standard"}
    assert "position 1" in waiting["lifecycle"]["reason"] and "quota" in waiting["lifecycle"]["reason"]
    assert waiting["nextChangeAt"] is not None
    recorded = row(scheduler, key)
    assert (recorded["phase"], recorded["position"], recorded["path"]) == ("Pending", 1, "pulumi")

    # a pass while it still waits: asked again, still Pending, nothing booked twice
    assert provider.diff("greenvm-etl", waiting, p).changes
    again = provider.update("greenvm-etl", waiting, p).outs
    assert again["phase"] == "Pending" and row(scheduler, key)["revision"] == 1

    # the quota frees: the queue admits it, and the next pass places it from the record
    r = httpx.delete(f"{scheduler.url}/reservations/{big}", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 20
    while row(scheduler, key)["phase"] != "Scheduled":
        assert time.monotonic() < deadline, "the queue did not admit the workload"
        time.sleep(0.1)
    admitted = row(scheduler, key)
    placed = provider.update("greenvm-etl", again, p).outs
    assert placed["decision"]["zone"] == admitted["zone"]
    assert placed["decision"]["schedulingTime"] == admitted["start"].replace("+00:00", "Z")
    # it runs now (the best window is now), so this pass opens its gate as any placement's would
    assert placed["reservation"] == {"key": key, "phase": placed["phase"]} and placed["phase"] != "Pending"
    assert row(scheduler, key)["revision"] == admitted["revision"]  # the admission's booking, replayed


def test_a_waiting_workloads_delete_withdraws_it(servers):
    _, scheduler = servers
    clock = same_clock(scheduler)
    provider = PlacementProvider(clock)
    fill_quota(scheduler, clock)
    p = props(servers, tenant=TENANT) | {"stack": "dev"}
    waiting = provider.create(p).outs
    provider.delete("greenvm-etl", waiting)
    released = row(scheduler, reservation_key(p))
    assert released["phase"] == "Released" and released["reason"] == "workload etl removed from stack dev"


def test_a_workload_whose_deadline_passes_while_it_waits_is_failed_and_withdrawn(servers):
    """Its deadline passes in the queue: the pass records it Failed (the update succeeds, saying
    why), withdraws its queued request, and later passes leave it Failed without asking again."""
    _, scheduler = servers
    clock = same_clock(scheduler)
    provider = PlacementProvider(clock)
    fill_quota(scheduler, clock)
    p = props(servers, tenant=TENANT) | {"stack": "dev"}
    key = reservation_key(p)
    waiting = provider.create(p).outs
    assert waiting["phase"] == "Pending"

    clock.now += timedelta(days=3)  # past its deadline (two days ahead), for the pass and the scheduler
    set_clock_file(scheduler.clock_file, clock.now)
    assert provider.diff("greenvm-etl", waiting, p).changes
    failed = provider.update("greenvm-etl", waiting, p).outs
    assert failed["phase"] == "Failed" and failed["decision"] is None and failed["manifests"] == []
    assert failed["nextChangeAt"] is None
    assert failed["reservation"] == {"key": key, "phase": "Failed"}
    reason = failed["lifecycle"]["reason"]
    assert reason.startswith("left the scheduler's queue unplaced: workload 'etl' was not placed: ")
    assert [e["phase"] for e in failed["lifecycle"]["events"]] == ["Pending", "Failed"]
    withdrawn = row(scheduler, key)
    assert withdrawn["phase"] == "Released" and withdrawn["reason"] == reason
    assert not provider.diff("greenvm-etl", failed, p).changes  # Failed stays Failed
