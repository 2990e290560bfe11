"""A run's report of its end, on a real scheduler process: a token scoped to one reservation,
issued to its owner once per decision, taken by one endpoint only, recorded once. Every tenant is
hostile: another tenant's writer, a guessed token, another reservation's token, a replaced token
and the token at any other endpoint are all refused, and refusals say nothing of the key."""

from __future__ import annotations

import shutil
import subprocess

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from greenops.models import Workload
from greenops.renderers.user_data import report_script, user_data
from tests.support.cloud_init import written
from tests.support.common import missing, require_cloud_init

pytestmark = pytest.mark.integration
DEADLINE = "2027-01-17T03:00:00Z"


def book(s: SchedulerServer, token: str, key: str, tenant: str, cpu: int = 1) -> None:
    r = httpx.post(
        f"{s.url}/scheduling",
        headers={"Authorization": f"Bearer {token}"},
        json={
            "key": key,
            "eligible_regions": ["FR", "DE"],
            "deadline": DEADLINE,
            "duration": 2,
            "cpu": cpu,
            "memory": 2,
            "tenant": tenant,
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text


def mint(s: SchedulerServer, token: str, key: str, **params) -> httpx.Response:
    return httpx.post(
        f"{s.url}/reservations/{key}/completion-token",
        headers={"Authorization": f"Bearer {token}"},
        params=params,
        timeout=10,
    )


def report(s: SchedulerServer, token: str, key: str, status) -> httpx.Response:
    return httpx.post(
        f"{s.url}/reservations/{key}/completion",
        headers={"Authorization": f"Bearer {token}"},
        json={"exitStatus": status},
        timeout=10,
    )


@pytest.fixture(scope="module")
def sched(tmp_path_factory):
    log = tmp_path_factory.mktemp("completion") / "scheduler.log"
    with SchedulerServer(env={"GREENOPS_NOW": "2027-01-10T03:00:00Z"}, log=log) as s:
        yield s


def test_the_owner_gets_one_token_and_the_run_reports_once(sched):
    a = sched.issue("team-a-ci", ["team-a"])
    book(sched, a, "stack/etl/1", "team-a")
    r = mint(sched, a, "stack/etl/1")
    assert r.status_code == 201, r.text
    token = r.json()["token"]
    assert token.startswith("gor_") and len(token) > 40
    # once per decision: asking again says so instead of silently voiding the first
    again = mint(sched, a, "stack/etl/1")
    assert again.status_code == 409 and "issued already" in again.json()["detail"]

    done = report(sched, token, "stack/etl/1", 3)
    assert done.status_code == 200, done.text
    assert done.json()["completion"]["exitStatus"] == 3 and done.json()["phase"] == "Scheduled"
    reported_at = done.json()["completion"]["reportedAt"]
    assert reported_at == "2027-01-10T03:00:00Z"  # the scheduler's clock, not the VM's
    # a retried report is a replay; a different end is a conflict; the record keeps the first
    assert report(sched, token, "stack/etl/1", 3).status_code == 200
    conflict = report(sched, token, "stack/etl/1", 0)
    assert conflict.status_code == 409 and "already reported exit status 3" in conflict.json()["detail"]
    row = httpx.get(f"{sched.url}/reservations/stack/etl/1", headers={"Authorization": f"Bearer {a}"}).json()
    assert row["completion"] == {"exitStatus": 3, "reportedAt": reported_at}


def test_hostile_callers_are_refused_and_learn_nothing(sched):
    a = sched.issue("team-a-hostile", ["team-a"])
    b = sched.issue("team-b-hostile", ["team-b"])
    book(sched, a, "stack/a-run/1", "team-a")
    book(sched, b, "stack/b-run/1", "team-b")
    # another tenant's writer cannot mint a token for team-a's reservation, nor learn it exists
    foreign = mint(sched, b, "stack/a-run/1")
    assert (foreign.status_code, foreign.json()["detail"]) == (404, "reservation stack/a-run/1: no such key")
    token_a = mint(sched, a, "stack/a-run/1").json()["token"]
    token_b = mint(sched, b, "stack/b-run/1").json()["token"]
    # a token reports for its own key only; a guessed one, a missing key and no token alike: 401, same words
    refusals = [
        report(sched, token_b, "stack/a-run/1", 0),
        report(sched, "gor_" + "A" * 43, "stack/a-run/1", 0),
        report(sched, token_a, "stack/no-such-key/1", 0),
        report(sched, a, "stack/a-run/1", 0),  # the tenant's own API token is not a completion token
        httpx.post(f"{sched.url}/reservations/stack/a-run/1/completion", json={"exitStatus": 0}),
    ]
    assert [r.status_code for r in refusals] == [401] * 5, [r.text for r in refusals]
    assert all(r.headers["www-authenticate"] == "Bearer" for r in refusals)
    assert "not this reservation's" in refusals[0].json()["detail"]
    assert refusals[2].json()["detail"].endswith("the completion token is not this reservation's (or was replaced)")
    # the completion token is good for nothing else
    for method, path in [
        ("GET", "/reservations"),
        ("GET", "/reservations/stack/a-run/1"),
        ("DELETE", "/reservations/stack/a-run/1"),
    ]:
        r = httpx.request(method, f"{sched.url}{path}", headers={"Authorization": f"Bearer {token_a}"})
        assert r.status_code == 401, (method, path, r.text)
    # a malformed report names the field
    bad = report(sched, token_a, "stack/a-run/1", 256)
    assert bad.status_code == 422 and "exitStatus" in bad.text
    # a replaced token stops working; nothing was recorded by any refusal
    token_a2 = mint(sched, a, "stack/a-run/1", replace="true").json()["token"]
    assert report(sched, token_a, "stack/a-run/1", 0).status_code == 401
    row = httpx.get(f"{sched.url}/reservations/stack/a-run/1", headers={"Authorization": f"Bearer {a}"}).json()
    assert row["completion"] is None
    assert report(sched, token_a2, "stack/a-run/1", 0).status_code == 200


def test_a_new_decision_or_a_release_ends_the_token(sched):
    a = sched.issue("team-a-redecide", ["team-a"])
    book(sched, a, "stack/moved/1", "team-a")
    token = mint(sched, a, "stack/moved/1").json()["token"]
    book(sched, a, "stack/moved/1", "team-a", cpu=2)  # a changed request: a new decision
    assert report(sched, token, "stack/moved/1", 0).status_code == 401
    fresh = mint(sched, a, "stack/moved/1").json()["token"]  # the new decision gets its own
    released = httpx.delete(f"{sched.url}/reservations/stack/moved/1", headers={"Authorization": f"Bearer {a}"})
    assert released.status_code == 200
    late = report(sched, fresh, "stack/moved/1", 0)
    assert late.status_code == 401 and "Released" in late.json()["detail"]
    assert mint(sched, a, "stack/moved/1").status_code == 409


@pytest.mark.parametrize("status", [0, 7])
def test_the_vms_user_data_reports_its_end_to_the_real_scheduler(sched, tmp_path, status):
    """The cloud-config a VM gets, valid for cloud-init, run here as cloud-init's runcmd would run it
    (its paths moved into a scratch directory): the script's exit status reaches the scheduler with
    the reservation's token, through the report script and curl."""
    curl = shutil.which("curl")
    if curl is None:
        missing("curl is not installed (the report script posts with it, as a cloud image does)")
    a = sched.issue(f"team-a-vm-{status}", ["team-a"])
    key = f"stack/vm-run-{status}/1"
    book(sched, a, key, "team-a")
    token = mint(sched, a, key).json()["token"]
    script = f"#!/bin/sh\necho working\nexit {status}\n"
    workload = Workload.model_validate(
        {"name": "vm-run", "cpu": 1, "memory": 2, "duration": "2h", "deadline": DEADLINE,
         "originRegion": "westeurope", "tenant": "team-a", "run": {"script": script}}
    )  # fmt: skip
    text = user_data(workload, report_script(f"{sched.url}/reservations/{key}/completion", token))
    assert text is not None
    checked = subprocess.run(
        [require_cloud_init(), "schema", "-c", "/dev/stdin"], input=text, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

    assert subprocess.run(written(text, tmp_path), timeout=60).returncode == 0
    assert (tmp_path / "exit-status").read_text().strip() == str(status)
    assert "working" in (tmp_path / "greenops-run.log").read_text()
    row = httpx.get(f"{sched.url}/reservations/{key}", headers={"Authorization": f"Bearer {a}"}).json()
    assert row["completion"]["exitStatus"] == status
