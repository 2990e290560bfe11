"""The scheduler's bearer token and its bound on one request's work: in-process with FastAPI's
TestClient and an injected clock, and once through the real process."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient

from greenops.clock import stamp
from greenops.local.scheduler import SchedulerServer
from greenops.scheduler.api import MAX_WORK, create_app
from greenops.scheduler.sources import ProfileSource

NOW = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)
TOKEN = "s3cr3t-scheduler-token"


def body(**over) -> dict:
    b = {
        "number_of_jobs": 1,
        "eligible_regions": ["FR", "DE"],
        "deadline": "2027-01-11T03:00:00Z",
        "duration": 2,
        "cpu": 4,
        "memory": 8,
    }
    b.update(over)
    return b


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(ProfileSource(), clock=lambda: NOW, token=TOKEN))


def test_without_the_token_it_is_401_and_health_stays_open(client):
    r = client.post("/scheduling", json=body())
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "bearer token is required" in r.json()["detail"]
    assert client.post("/scheduling", json=body(), headers={"Authorization": f"Bearer {TOKEN}x"}).status_code == 401
    assert client.post("/scheduling", json=body(), headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200


def test_with_the_token_it_decides(client):
    r = client.post("/scheduling", json=body(), headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.json()["scheduling_location"] in ("FR", "DE")


def test_no_token_configured_means_open():
    open_app = TestClient(create_app(ProfileSource(), clock=lambda: NOW))
    assert open_app.post("/scheduling", json=body()).status_code == 200


def test_one_request_too_much_work_is_a_422_naming_the_limit(client):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    zones = ["FR", "DE", "GB", "SE-SE3", "FI", "IT-NO", "ES", "PL", "NL", "BE"]
    r = client.post(
        "/scheduling",
        headers=auth,
        json=body(number_of_jobs=10000, eligible_regions=zones, deadline="2028-01-10T03:00:00Z"),
    )
    assert r.status_code == 422
    assert r.json()["detail"] == (
        f"number_of_jobs: 10000 jobs x 10 zones x 8760 h of horizon is 876000000 slot "
        f"evaluations, above the limit of {MAX_WORK}: send fewer jobs or zones per request, "
        "or an earlier deadline"
    )
    ok = client.post("/scheduling", headers=auth, json=body(number_of_jobs=20, eligible_regions=zones[:5]))
    assert ok.status_code == 200


@pytest.mark.integration
def test_the_real_process_reads_its_token_from_the_environment():
    deadline = stamp(datetime.now(UTC) + timedelta(days=1))
    with SchedulerServer(token=TOKEN) as s:
        assert httpx.post(f"{s.url}/scheduling", json=body(deadline=deadline)).status_code == 401
        r = httpx.post(
            f"{s.url}/scheduling", json=body(deadline=deadline), headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert r.status_code == 200
        assert TOKEN not in s.log.read_text()
