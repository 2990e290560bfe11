"""Resizing a running workload, against a real OPA and a real scheduler on loopback: on Azure and
GCP the same Placement is updated, not replaced; its VM keeps its provider, region and zone with the new
size, its run keeps its actual start and the hours already run (it completes at the original start
plus its duration), the rest is booked under the new spec's key, and the old booking is released
saying what happened. Where the size cannot change in place, the workload is replaced as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import parse_time, stamp
from greenops.provider.placement import PlacementProvider, reservation_key
from tests.provider.test_placement_provider import Clock, placement_servers, props

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def servers():
    with placement_servers() as both:
        yield both


def row(scheduler, key: str) -> dict:
    r = httpx.get(f"{scheduler.url}/reservations/{key}", params={"tenant": "data"}, headers=scheduler.admin_headers)
    assert r.status_code == 200, r.text
    return r.json()


def running(provider: PlacementProvider, clock: Clock, p: dict) -> dict:
    outs = provider.create(p).outs
    clock.now = max(clock.now, parse_time(outs["decision"]["schedulingTime"]))
    if outs["phase"] != "Running":
        outs = provider.update("greenvm-etl", outs, p).outs
    assert outs["phase"] == "Running", outs["lifecycle"]
    return outs


def vm_sizes(outs: dict) -> list[str]:
    """The size of each VM object: ASO's VirtualMachine, Config Connector's ComputeInstance."""
    sizes = []
    for m in outs["manifests"]:
        if m["kind"] == "VirtualMachine":
            sizes.append(m["spec"]["hardwareProfile"]["vmSize"])
        elif m["kind"] == "ComputeInstance":
            # Config Connector stops the instance to apply the new machineType, then starts it
            assert m["metadata"]["annotations"]["cnrm.cloud.google.com/allow-stopping-for-update"] == "true"
            sizes.append(m["spec"]["machineType"])
    return sizes


@pytest.mark.parametrize("cloud", ["azure", "gcp"])
def test_a_running_workload_is_resized_in_place_and_keeps_its_hours(servers, cloud):
    _, scheduler = servers
    clock = Clock()
    provider = PlacementProvider(clock)
    deadline = stamp(datetime.now(UTC) + timedelta(hours=5))
    p = props(servers, name="etl", cpu=2, memory=4, deadline=deadline, eligibleProviders=[cloud])
    before = running(provider, clock, p)
    since = before["lifecycle"]["runningSince"]
    old_key = reservation_key(before)

    clock.now += timedelta(minutes=45)
    bigger = p | {"workload": {**before["workload"], "cpu": 8, "memory": 16}}
    diff = provider.diff("greenvm-etl", before, bigger)
    assert diff.changes and not diff.replaces  # an update of the same Placement
    after = provider.update("greenvm-etl", before, bigger).outs

    d0, d1 = before["decision"], after["decision"]
    assert (d1["provider"], d1["region"], d1["zone"]) == (d0["provider"], d0["region"], d0["zone"])
    assert d1["vmSize"] != d0["vmSize"] and vm_sizes(after) == [d1["vmSize"]]
    assert after["phase"] == "Running" and after["lifecycle"]["runningSince"] == since
    reason = after["lifecycle"]["reason"]
    assert reason.startswith("resized in place: the size change (cpu 2 vCPU -> 8 vCPU, memory 4 GB -> 16 GB)")
    assert f"resized to {d1['vmSize']}" in reason and "45m of 2h run kept" in reason, reason

    new_key = reservation_key(after)
    assert new_key != old_key and after["reservation"] == {"key": new_key, "phase": "Running"}
    old, new = row(scheduler, old_key), row(scheduler, new_key)
    assert old["phase"] == "Released" and old["reason"].startswith("resized in place:")
    assert old["reason"].endswith(f"it continues as {new_key}")
    assert (new["phase"], new["zone"]) == ("Running", d0["zone"])
    # the rest of the run only: 1 h 15 min from the resize
    assert parse_time(new["end"]) - parse_time(new["start"]) == timedelta(hours=1, minutes=15)

    # the run ends at its original start plus its duration, not two hours after the resize
    clock.now = parse_time(since) + timedelta(hours=2) - timedelta(seconds=1)
    assert provider.update("greenvm-etl", after, bigger).outs["phase"] == "Running"
    clock.now = parse_time(since) + timedelta(hours=2)
    done = provider.update("greenvm-etl", after, bigger).outs
    assert done["phase"] == "Completed" and done["lifecycle"]["runningSince"] == since


def test_where_the_size_cannot_change_in_place_the_workload_is_replaced(servers):
    clock = Clock()
    provider = PlacementProvider(clock)
    deadline = stamp(datetime.now(UTC) + timedelta(hours=5))
    p = props(servers, name="etl", cpu=2, memory=4, deadline=deadline, eligibleProviders=["aws"])
    before = running(provider, clock, p)
    bigger = p | {"workload": {**before["workload"], "cpu": 8, "memory": 16}}
    assert provider.diff("greenvm-etl", before, bigger).replaces == ["workload"]  # its run starts again
