"""Cluster-path holds and the controller's scope, on the real scheduler process.

A booking on the cluster path (OPA's, at admission) is a hold until confirmed; a principal with the
report role (the cluster path's controller) confirms, reports phases with their real times and
releases cluster-path reservations of every tenant, and can neither book nor touch another path."""

from __future__ import annotations

import httpx
import pytest

from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, booking

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sched(tmp_path_factory):
    log = tmp_path_factory.mktemp("holds") / "scheduler.log"
    with SchedulerServer(log=log, env={"GREENOPS_NOW": NOW, "GREENOPS_SCHEDULER_HOLD_SECONDS": "30"}) as s:
        yield (
            s,
            {
                "opa": s.issue("opa", None, paths=["cluster"]),
                "controller": s.issue("controller", None, paths=["cluster"], role="report"),
                "team": s.issue("team-a-ci", ["team-a"], paths=["pulumi"]),
            },
        )


def call(s: SchedulerServer, method: str, path: str, token: str, **kw) -> httpx.Response:
    return httpx.request(method, f"{s.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=15, **kw)


def test_a_cluster_booking_is_a_hold_until_confirmed(sched):
    s, t = sched
    assert call(
        s, "PUT", "/reservations/ns/vm/uid-1", t["opa"], json=booking(tenant="team-a", path="cluster")
    ).is_success
    row = call(s, "GET", "/reservations/ns/vm/uid-1", t["controller"]).json()
    assert row["held_until"] == "2027-01-10T03:00:30Z"
    assert call(s, "PUT", "/reservations/team-a/stack/db", t["team"], json=booking()).is_success
    assert call(s, "GET", "/reservations/team-a/stack/db", t["team"]).json()["held_until"] is None

    r = call(s, "PATCH", "/reservations/ns/vm/uid-1", t["controller"], json={"confirm": True})
    assert r.status_code == 200, r.text
    assert r.json()["held_until"] is None and r.json()["phase"] == "Scheduled"
    # confirming again changes nothing (the controller's handlers are replayed after a restart)
    assert (
        call(s, "PATCH", "/reservations/ns/vm/uid-1", t["controller"], json={"confirm": True}).json()["held_until"]
        is None
    )


def test_the_controller_reports_phases_with_their_times_and_releases(sched):
    s, t = sched
    key = "/reservations/ns/vm/uid-2"
    assert call(s, "PUT", key, t["opa"], json=booking(tenant="team-b", path="cluster")).is_success
    lifecycle = {
        "phase": "Provisioning",
        "reason": "gate opened",
        "gateOpenedAt": "2027-01-10T03:00:00Z",
        "events": [{"at": "2027-01-10T03:00:00Z", "phase": "Provisioning", "reason": "gate opened"}],
    }
    r = call(
        s,
        "PATCH",
        key,
        t["controller"],
        json={"phase": "Provisioning", "reason": "gate opened", "lifecycle": lifecycle},
    )
    assert r.status_code == 200, r.text
    assert r.json()["phase"] == "Provisioning"
    assert r.json()["lifecycle"]["gateOpenedAt"] == "2027-01-10T03:00:00Z"
    r = call(s, "DELETE", key, t["controller"], params={"reason": "VmTemplate ns/vm deleted"})
    assert r.json()["phase"] == "Released" and r.json()["reason"] == "VmTemplate ns/vm deleted"


def test_bad_reports_are_refused_by_field(sched):
    s, t = sched
    key = "/reservations/ns/vm/uid-3"
    assert call(s, "PUT", key, t["opa"], json=booking(tenant="team-a", path="cluster")).is_success
    r = call(s, "PATCH", key, t["controller"], json={})
    assert r.status_code == 422 and "give a phase, confirm or a lifecycle" in r.text
    r = call(s, "PATCH", key, t["controller"], json={"phase": "Running", "lifecycle": {"phase": "Provisioning"}})
    assert r.status_code == 422 and "is not the reported Running" in r.text


def test_the_controller_books_nothing_and_touches_no_other_path(sched):
    s, t = sched
    r = call(s, "PUT", "/reservations/ns/vm/uid-9", t["controller"], json=booking(tenant="team-a", path="cluster"))
    assert r.status_code == 403 and "needs the write role" in r.text
    assert call(s, "PUT", "/reservations/team-a/stack/web", t["team"], json=booking()).is_success
    for method, kw in (("PATCH", {"json": {"phase": "Failed"}}), ("DELETE", {})):
        r = call(s, method, "/reservations/team-a/stack/web", t["controller"], **kw)
        assert r.status_code == 403 and "path pulumi" in r.text
    assert call(s, "GET", "/reservations/team-a/stack/web", t["team"]).json()["phase"] == "Scheduled"


def test_a_report_token_for_every_tenant_is_only_for_the_cluster_path(sched):
    s, _ = sched
    body = {"name": "too-wide", "role": "report", "tenants": None, "paths": ["pulumi"]}
    r = httpx.post(f"{s.url}/credentials", json=body, headers=s.admin_headers, timeout=10)
    assert r.status_code == 422 and "a report token names its tenants" in r.text
