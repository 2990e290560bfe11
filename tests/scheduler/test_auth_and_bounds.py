"""The scheduler's credentials and its bound on one request's work: in-process with FastAPI's
TestClient and an injected clock, and once through the real process."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient

from greenops.common.clock import stamp
from greenops.intensity import ProfileSource
from greenops.local.scheduler import SchedulerServer
from greenops.scheduler.api import MAX_WORK, InsecureConfiguration, create_app
from tests.support.bookings import booking

NOW = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)
TOKEN = "s3cr3t-scheduler-token"  # the bootstrap admin's


def body(**over) -> dict:
    return booking(**{"number_of_jobs": 1, **over})


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(ProfileSource(), clock=lambda: NOW, admin_tokens=[TOKEN]))


def test_without_the_token_it_is_401_and_health_stays_open(client):
    r = client.post("/scheduling", json=body())
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "bearer token is required" in r.json()["detail"]
    wrong = client.post("/scheduling", json=body(), headers={"Authorization": f"Bearer {TOKEN}x"})
    assert wrong.status_code == 401 and "not known" in wrong.json()["detail"]
    assert client.post("/scheduling", json=body(), headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200


def test_with_the_token_it_decides(client):
    r = client.post("/scheduling", json=body(), headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.json()["scheduling_location"] in ("FR", "DE")


def test_an_issued_token_decides_for_its_tenant_only(client):
    admin = {"Authorization": f"Bearer {TOKEN}"}
    issued = client.post("/credentials", headers=admin, json={"name": "ml-ci", "tenants": ["ml"]})
    assert issued.status_code == 201
    ml = {"Authorization": f"Bearer {issued.json()['token']}"}
    assert client.post("/scheduling", json=body(), headers=ml).status_code == 200
    other = client.post("/scheduling", json=body(tenant="web"), headers=ml)
    assert other.status_code == 403 and "tenant web" in other.json()["detail"]
    # only the admin issues tokens
    assert client.post("/credentials", headers=ml, json={"name": "x", "tenants": ["ml"]}).status_code == 403


def test_no_credential_configured_is_refused_naming_the_settings():
    # the old default, an open scheduler, is gone: an app nobody could authenticate to is not built
    with pytest.raises(InsecureConfiguration) as refused:
        create_app(ProfileSource(), clock=lambda: NOW)
    message = str(refused.value)
    assert "GREENOPS_SCHEDULER_ADMIN_TOKEN" in message and "--admin-token-file" in message
    assert "--principals" in message
    with pytest.raises(InsecureConfiguration, match="empty"):
        create_app(ProfileSource(), clock=lambda: NOW, admin_tokens=[""])


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
def test_the_real_process_reads_its_admin_token_from_the_environment():
    deadline = stamp(datetime.now(UTC) + timedelta(days=1))
    with SchedulerServer(admin_token=TOKEN) as s:
        assert httpx.post(f"{s.url}/scheduling", json=body(deadline=deadline)).status_code == 401
        r = httpx.post(
            f"{s.url}/scheduling", json=body(deadline=deadline), headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert r.status_code == 200
        tenant = s.issue("ml-ci", ["ml"])
        r = httpx.post(
            f"{s.url}/scheduling", json=body(deadline=deadline), headers={"Authorization": f"Bearer {tenant}"}
        )
        assert r.status_code == 200
        log = s.log.read_text()
        assert TOKEN not in log and tenant not in log


@pytest.mark.integration
def test_the_real_process_refuses_to_start_without_an_admin_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GREENOPS_SCHEDULER_")}
    # the old shared token is a client's variable now: the scheduler does not read it as its own
    env["GREENOPS_SCHEDULER_TOKEN"] = TOKEN
    env["GREENOPS_SCHEDULER_DATABASE"] = f"sqlite:///{tmp_path / 'r.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "greenops.scheduler", "--host", "127.0.0.1", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "GREENOPS_SCHEDULER_ADMIN_TOKEN" in done.stderr and TOKEN not in done.stderr
