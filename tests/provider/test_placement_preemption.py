"""Preemption on the Pulumi path, against a real OPA and a real scheduler on loopback whose policy
says ``preemption: waiting``: a request of a higher class takes the hours of a Scheduled workload
whose window has not come; at its gate the pass finds the record no longer holds those hours and
the workload waits in the queue (Pending, the reason saying it was preempted) instead of bringing
up a VM; once room frees, the queue places it again and the next pass takes that decision, its
lifecycle saying it was preempted and admitted again.

The scheduler has 4 vCPU per zone-hour; the test decides the workload's window by pinning it to
one region and holding that zone for its first hours with bookings of another tenant
(tests.provider.test_placement_failover), so that it has no other window once preempted."""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.provider.placement import PlacementProvider, reservation_key
from tests.provider.test_placement_failover import FILLER, hold, release, row, start_of, zone_regions
from tests.provider.test_placement_provider import Clock, placement_servers, props

pytestmark = pytest.mark.integration

POLICY = f"""
default_tenant_vcpu_quota: null
tenant_rules:
  {FILLER}:
    priority_class: critical
preemption: waiting
"""


@pytest.fixture
def servers():
    policy = Path(tempfile.mkdtemp(prefix="greenops-preempt-")) / "policy.yaml"
    policy.write_text(POLICY)
    env = {"GREENOPS_SCHEDULER_POLICY_CONFIG": str(policy), "GREENOPS_SCHEDULER_QUEUE_SECONDS": "0"}
    with placement_servers(scheduler={"capacity_vcpu": 4, "env": env}) as both:
        _, scheduler = both
        scheduler.filler = scheduler.issue("filler", [FILLER], paths=["api"])
        yield both


def test_a_preempted_workload_waits_at_its_gate_and_takes_the_queues_new_decision(servers):
    _, scheduler = servers
    t = datetime.now(UTC).replace(microsecond=0)
    clock = Clock()
    clock.now = t
    provider = PlacementProvider(clock)
    # pinned to one region, its 2 h run has 5 min of slack from three hours on: its zone is held until then
    held_until = t + timedelta(minutes=1, hours=3)
    free_from = held_until.replace(minute=0, second=0) + timedelta(hours=1)  # the record books whole hours
    p = props(
        servers,
        name="etl",
        deadline=stamp(free_from + timedelta(hours=2, minutes=5)),
        dataResidency="none",
        provider="azure",
        region="francecentral",
    )
    p["leadSeconds"] = 600  # its gate opens 10 min before its start
    zones = zone_regions(servers, p)
    assert len(zones) == 1, zones
    held = hold(scheduler, zones, t + timedelta(minutes=1), 3, "first")
    placed = provider.create(p).outs
    assert placed["phase"] == "Scheduled" and start_of(placed) >= free_from, placed["decision"]
    assert placed["decision"]["preemptible"] is True  # standard, where the policy preempts
    assert held  # and stays held: once preempted, it has no earlier window either
    zone, start = placed["decision"]["zone"], start_of(placed)

    # a critical request of another tenant needs exactly those hours
    urgent = {
        "key": f"{FILLER}/urgent",
        "eligible_regions": [zone],
        "earliest_start": stamp(start),
        "deadline": stamp(start + timedelta(hours=2)),
        "duration": 2,
        "cpu": 4,
        "memory": 8,
    }
    headers = {"Authorization": f"Bearer {scheduler.filler}"}
    r = httpx.post(f"{scheduler.url}/scheduling", json=urgent, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    key = reservation_key(p)
    assert row(scheduler, key)["phase"] == "Pending"

    # the pass at its gate brings nothing up: the workload waits, saying why
    clock.now = start - timedelta(minutes=10)
    assert provider.diff("greenvm-etl", placed, p).changes
    waiting = provider.update("greenvm-etl", placed, p).outs
    assert waiting["phase"] == "Pending" and waiting["manifests"] == [] and waiting["decision"] is None, waiting
    assert waiting["reservation"]["position"] == 1
    said = [e["reason"] for e in waiting["lifecycle"]["events"]]
    assert any("preempted at" in s and "critical (1000)" in s for s in said), said
    assert FILLER not in " ".join(said)  # nothing of the other tenant's is told

    # the critical booking is given back: the queue places it again, and the next pass takes that
    release(scheduler, [urgent["key"]])
    deadline = time.monotonic() + 20
    while row(scheduler, key)["phase"] != "Scheduled":
        assert time.monotonic() < deadline, row(scheduler, key)
        time.sleep(0.2)
    clock.now += timedelta(minutes=5)
    again = provider.update("greenvm-etl", waiting, p).outs
    recorded = row(scheduler, key)
    assert again["phase"] in ("Scheduled", "Provisioning", "Running"), again["lifecycle"]
    assert again["decision"]["zone"] == recorded["zone"] and stamp(start_of(again)) == recorded["start"]
    # one life: its first placement, the preemption that sent it to the queue, and its placement from there
    lc = again["lifecycle"]
    assert lc["replacements"] == 1, lc
    said = [(e["phase"], e["reason"]) for e in lc["events"]]
    assert said[0][0] == "Scheduled" and said[0][1].startswith("placed: azure/francecentral"), said
    from_queue = [r for _, r in said if r.startswith("placed from the queue, where it waited from ")]
    assert len(from_queue) == 1 and "preempted at" in from_queue[0] and "critical (1000)" in from_queue[0], said
