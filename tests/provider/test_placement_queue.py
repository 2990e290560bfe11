"""Placement and the scheduler's queue, against a real OPA and a real scheduler on loopback: a workload
whose tenant's quota is used up is created Pending (the update succeeds, with its position and
reason, and no objects), each pass asks again, and once a release frees the quota the queue admits
it and the next pass places it as any other; its delete while it waits withdraws it."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.provider.placement import PlacementProvider, reservation_key
from tests.provider.test_placement_provider import Clock, placement_servers, props

pytestmark = pytest.mark.integration

TENANT = "research"  # its quota is 256 vCPU in the packaged policy settings


@pytest.fixture
def servers():
    with placement_servers(scheduler={"env": {"GREENOPS_SCHEDULER_QUEUE_SECONDS": "0"}}) as both:
        opa, scheduler = both
        scheduler.stack_token = scheduler.issue("research-stack", [TENANT], paths=["pulumi"])
        yield both


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
    clock = Clock()
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
    assert placed["phase"] == "Scheduled" and placed["decision"]["zone"] == admitted["zone"]
    assert placed["reservation"] == {"key": key, "phase": "Scheduled"}
    assert row(scheduler, key)["revision"] == admitted["revision"]  # the admission's booking, replayed


def test_a_waiting_workloads_delete_withdraws_it(servers):
    _, scheduler = servers
    clock = Clock()
    provider = PlacementProvider(clock)
    fill_quota(scheduler, clock)
    p = props(servers, tenant=TENANT) | {"stack": "dev"}
    waiting = provider.create(p).outs
    provider.delete("greenvm-etl", waiting)
    released = row(scheduler, reservation_key(p))
    assert released["phase"] == "Released" and released["reason"] == "workload etl removed from stack dev"
