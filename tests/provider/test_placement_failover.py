"""Failover on the Pulumi path, against a real OPA and a real scheduler on loopback: an admin
declares regions unavailable mid-day, and the next pass moves the placements there, one waiting for
its window and one running, to another region within their constraints and deadline, each recorded
as a new attempt with why, the hours lost and the carbon it costs; a workload whose only eligible
region is out is Failed, naming the outage and that no room was left.

The scheduler has 4 vCPU per zone-hour, so the test decides when each workload runs by holding
zones with bookings of its own, released before the moves (without them a start would be the
carbon forecast's to choose, and a run could not be made to be running, or waiting, at the outage)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import parse_time, stamp
from greenops.models import Workload
from greenops.placing.failover import Outages
from greenops.policies.client import OpaClient
from greenops.provider.placement import PlacementProvider, reservation_key
from tests.provider.test_placement_provider import Clock, placement_servers, props

pytestmark = pytest.mark.integration

FILLER = "research"  # the tenant whose API bookings hold the zones (not the workloads' tenant)


@pytest.fixture
def servers():
    with placement_servers(scheduler={"capacity_vcpu": 4}) as both:
        _, scheduler = both
        scheduler.filler = scheduler.issue("filler", [FILLER], paths=["api"])
        yield both


def zone_regions(servers, p: dict) -> dict[str, str]:
    """Policy's eligible zones of ``p``'s workload, each with the provider/region it maps to."""
    opa, _ = servers
    spec = Workload.model_validate(p["workload"], context={"now": datetime.now(UTC)}).spec()
    with OpaClient(opa.url, token=opa.query_token) as client:
        return dict(client.require_allowed(spec)["zoneRegions"])


def hold(scheduler, zones, begin: datetime, hours: float, tag: str) -> list[str]:
    """Book each zone's whole capacity for ``hours`` from ``begin`` (a zone already taken then is
    skipped); the keys booked."""
    keys = []
    for z in zones:
        key = f"{FILLER}/{tag}-{z}"
        body = {
            "key": key,
            "eligible_regions": [z],
            "earliest_start": stamp(begin),
            "deadline": stamp(begin + timedelta(hours=hours)),  # no slack: it runs exactly then
            "duration": hours,
            "cpu": 4,
            "memory": 8,
        }
        r = httpx.post(
            f"{scheduler.url}/scheduling", json=body, headers={"Authorization": f"Bearer {scheduler.filler}"}
        )
        assert r.status_code in (200, 409), r.text
        keys += [key] if r.status_code == 200 else []
    return keys


def release(scheduler, keys: list[str]) -> None:
    for key in keys:
        r = httpx.delete(
            f"{scheduler.url}/reservations/{key}",
            params={"reason": "the test's hold is over", "tenant": FILLER},
            headers={"Authorization": f"Bearer {scheduler.filler}"},
        )
        assert r.status_code == 200, r.text


def row(scheduler, key: str, tenant: str = "data") -> dict:
    r = httpx.get(f"{scheduler.url}/reservations/{key}", params={"tenant": tenant}, headers=scheduler.admin_headers)
    assert r.status_code == 200, r.text
    return r.json()


def start_of(outs: dict) -> datetime:
    return parse_time(outs["decision"]["schedulingTime"])


def test_a_region_outage_moves_waiting_and_running_workloads_and_fails_only_those_with_no_room(servers):
    _, scheduler = servers
    t = datetime.now(UTC).replace(microsecond=0)
    clock = Clock()
    clock.now = t
    provider = PlacementProvider(clock, outages=Outages(max_age=0))
    deadline = stamp(t + timedelta(days=2))
    running = props(servers, name="nightly", deadline=deadline, dataResidency="none")
    zones = zone_regions(servers, running)
    assert len(set(zones.values())) >= 3, zones

    # "nightly" runs now: every zone is held from three hours on, so its 2 h start within the hour
    held = hold(scheduler, zones, t + timedelta(hours=3), 40, "later")
    b = provider.create(running).outs
    assert start_of(b) <= t + timedelta(hours=1), b["decision"]
    release(scheduler, held)
    clock.now = start_of(b)
    if b["phase"] != "Running":
        b = provider.update("greenvm-nightly", b, running).outs
    assert b["phase"] == "Running", b["lifecycle"]
    was_running = f"{b['decision']['provider']}/{b['decision']['region']}"

    # half an hour into its run, "report" is declared: every zone is held for three hours, so it waits
    outage_at = clock.now = start_of(b) + timedelta(minutes=30)
    held = hold(scheduler, zones, outage_at, 3, "now")
    waiting = props(servers, name="report", deadline=deadline, dataResidency="none")
    a = provider.create(waiting).outs
    assert a["phase"] == "Scheduled" and start_of(a) > outage_at, a["decision"]
    # and "pinned" may only run where "nightly" runs
    pinned = props(
        servers,
        name="pinned",
        deadline=deadline,
        dataResidency="none",
        provider=b["decision"]["provider"],
        region=b["decision"]["region"],
    )
    c = provider.create(pinned).outs
    assert c["decision"]["region"] == b["decision"]["region"]
    release(scheduler, held)

    # the outage: the regions "nightly" and "report" are in
    was_waiting = f"{a['decision']['provider']}/{a['decision']['region']}"
    out = {was_running, was_waiting}
    for region in out:
        r = httpx.put(
            f"{scheduler.url}/outages/{region}", json={"reason": "power failure"}, headers=scheduler.admin_headers
        )
        assert r.status_code == 200, r.text

    clock.now = outage_at + timedelta(minutes=1)
    moved = {}
    for name, p, before in (("nightly", running, b), ("report", waiting, a), ("pinned", pinned, c)):
        assert provider.diff(f"greenvm-{name}", before, p).changes, name
        moved[name] = provider.update(f"greenvm-{name}", before, p).outs

    for name, before, phase in (("nightly", b, "Running"), ("report", a, "Scheduled")):
        after = moved[name]
        region = f"{after['decision']['provider']}/{after['decision']['region']}"
        assert after["phase"] in ("Scheduled", "Provisioning", "Running"), after["lifecycle"]
        assert region not in out, (name, region)
        assert start_of(after) >= clock.now
        lc = after["lifecycle"]
        assert lc["replacements"] == 1 and len(lc["failovers"]) == 1
        f = lc["failovers"][0]
        assert f["region"] == f"{before['decision']['provider']}/{before['decision']['region']}"
        assert f["phase"] == phase and "declared unavailable" in f["reason"] and "power failure" in f["reason"]
        assert f["intensityBefore"] == before["decision"]["expectedIntensity"]
        assert f["intensityAfter"] == after["decision"]["expectedIntensity"] and f["extraG"] is not None
        assert any(e["reason"].startswith("failed over: failover: region ") for e in lc["events"])
        # the record has the same key, booked anew where it went
        recorded = row(scheduler, reservation_key(before))
        assert recorded["zone"] == after["decision"]["zone"] and recorded["revision"] >= 2
    nightly = moved["nightly"]["lifecycle"]["failovers"][0]
    assert nightly["ranHours"] == pytest.approx(31 / 60, abs=1e-3) and nightly["lostG"] > 0  # its run starts again
    assert moved["report"]["lifecycle"]["failovers"][0]["ranHours"] == 0

    # "pinned" has nowhere else to go: Failed, saying why, and its booking is given back
    failed = moved["pinned"]
    assert failed["phase"] == "Failed" and failed["manifests"] == []
    reason = failed["lifecycle"]["reason"]
    assert f"region {was_running} declared unavailable" in reason and "no room elsewhere" in reason, reason
    assert row(scheduler, reservation_key(c))["phase"] == "Failed"

    # a later pass: the moved ones are not moved again, and the failed one stays as it is
    clock.now += timedelta(minutes=1)
    for name, p in (("nightly", running), ("report", waiting), ("pinned", pinned)):
        again = provider.update(f"greenvm-{name}", moved[name], p).outs
        assert again["decision"] == moved[name]["decision"] and len(again["lifecycle"]["failovers"]) == 1
