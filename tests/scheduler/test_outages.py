"""Declared outages on the real service (greenops/scheduler/api/outages.py): only an admin of every
tenant declares or lifts one; while a region is declared, no booking is made in its zones, a retry
of a booking there is booked anew elsewhere rather than replayed, and a request with no zone left
is refused naming the outage. Lifting it makes the region bookable again."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.local.scheduler import SchedulerServer
from greenops.placing import SchedulerClient

pytestmark = pytest.mark.integration

REGIONS = {"FR": "azure/francecentral", "DE": "azure/germanywestcentral"}


@pytest.fixture(scope="module")
def service():
    folder = Path(tempfile.mkdtemp(prefix="greenops-outages-"))
    with SchedulerServer(log=folder / "s.log") as s:
        s.writer = s.issue("media-ci", ["media"])
        s.scoped_admin = s.issue("media-admin", ["media"], role="admin")
        yield s


def headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def book(service, key: str, zones: list[str], **over) -> httpx.Response:
    body = {
        "key": key,
        "eligible_regions": zones,
        "regions": {z: REGIONS[z] for z in zones},
        "deadline": stamp(datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)),
        "duration": 2,
        "cpu": 2,
        "memory": 4,
    } | over
    return httpx.post(f"{service.url}/scheduling", json=body, headers=headers(service.writer), timeout=15)


def declare(service, token: str, region: str, reason: str = "storm over the datacentre") -> httpx.Response:
    return httpx.put(f"{service.url}/outages/{region}", json={"reason": reason}, headers=headers(token), timeout=15)


def test_only_an_admin_of_every_tenant_declares_or_lifts_an_outage(service):
    for token in (service.writer, service.scoped_admin):
        r = declare(service, token, "azure/westeurope")
        assert r.status_code == 403, r.text
        r = httpx.delete(f"{service.url}/outages/azure/westeurope", headers=headers(token), timeout=15)
        assert r.status_code == 403, r.text
    assert "every tenant" in declare(service, service.scoped_admin, "azure/westeurope").json()["detail"]
    for bad in ("oracle/westeurope", "azure/West_Europe"):
        assert declare(service, service.admin_token, bad).status_code == 422
    r = httpx.put(f"{service.url}/outages/azure/westeurope", json={}, headers=service.admin_headers, timeout=15)
    assert r.status_code == 422 and "reason" in r.text
    for reason in ("storm\x00", "x" * 1025):  # a NUL byte PostgreSQL cannot store; longer than its column
        r = declare(service, service.admin_token, "azure/westeurope", reason)
        assert r.status_code == 422 and "reason" in r.text, r.text
    assert SchedulerClient(service.url, token=service.writer).outages() == []  # nothing was declared


def test_a_declared_region_gets_no_booking_and_a_booking_there_moves_on_its_retry(service):
    first = book(service, "media/etl/1", ["FR"])
    assert first.status_code == 200 and first.json()["scheduling_location"] == "FR", first.text
    r = declare(service, service.admin_token, "azure/francecentral")
    assert r.status_code == 200, r.text
    assert (r.json()["declaredBy"], r.json()["reason"]) == ("admin", "storm over the datacentre")
    listed = SchedulerClient(service.url, token=service.writer).outages()  # a tenant may read them
    assert [(o["provider"], o["region"]) for o in listed] == [("azure", "francecentral")]
    try:
        # a new booking that may go to either zone goes to the one outside the outage
        other = book(service, "media/etl/2", ["FR", "DE"])
        assert other.status_code == 200 and other.json()["scheduling_location"] == "DE", other.text
        # one with no zone left is refused, naming the outage and its reason
        none_left = book(service, "media/etl/3", ["FR"])
        assert none_left.status_code == 409, none_left.text
        assert "azure/francecentral" in none_left.text and "storm over the datacentre" in none_left.text
        # the booking made in FR before is not replayed to its retry: with FR the only zone, it is refused
        retried = book(service, "media/etl/1", ["FR"])
        assert retried.status_code == 409, retried.text
        # and with another zone allowed it is booked anew there, replacing the booking (one key, one row)
        moved = book(service, "media/etl/1", ["FR", "DE"])
        assert moved.status_code == 200 and moved.json()["scheduling_location"] == "DE", moved.text
        row = httpx.get(f"{service.url}/reservations/media/etl/1", headers=service.admin_headers, timeout=15).json()
        assert (row["zone"], row["phase"], row["revision"]) == ("DE", "Scheduled", 2)
    finally:
        lifted = httpx.delete(f"{service.url}/outages/azure/francecentral", headers=service.admin_headers, timeout=15)
    assert lifted.status_code == 200, lifted.text
    again = httpx.delete(f"{service.url}/outages/azure/francecentral", headers=service.admin_headers, timeout=15)
    assert again.status_code == 404 and "no outage" in again.text
    # lifted: the region is bookable again (a copy of the outages is at most a few seconds old)
    back = book(service, "media/etl/4", ["FR"])
    assert back.status_code == 200 and back.json()["scheduling_location"] == "FR", back.text


def test_the_cli_declares_lists_and_lifts_an_outage(service, monkeypatch, capsys):
    from greenops.cli import main

    monkeypatch.setenv("GREENOPS_SCHEDULER_ADMIN_TOKEN", service.admin_token)
    at = ["--scheduler-url", service.url]
    assert main(["outage", "declare", "gcp/europe-west9", "--reason", "provider incident 4711", *at]) == 0
    assert "gcp/europe-west9  since " in capsys.readouterr().out
    assert main(["outage", "list", "-o", "json", *at]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(o["region"], o["reason"]) for o in listed] == [("europe-west9", "provider incident 4711")]
    assert main(["outage", "lift", "gcp/europe-west9", *at]) == 0
    assert capsys.readouterr().out.strip() == "gcp/europe-west9: lifted"
    assert main(["outage", "lift", "gcp/europe-west9", *at]) != 0  # nothing left to lift: a clear error
    assert "no outage of gcp/europe-west9" in capsys.readouterr().err
    assert main(["outage", "lift", "europe-west9", *at]) != 0
    assert "give it as provider/region" in capsys.readouterr().err
