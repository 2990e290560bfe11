"""The reservation record behind the scheduler: idempotent keys, replacement, release, dry runs,
quota across keys, and the listing. In-process (TestClient) with an injected clock, on a real
SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from greenops.common.clock import stamp
from greenops.intensity import ProfileSource
from greenops.policies.settings import PolicySettings
from greenops.reservations import ListingFilter, ReservationStore
from greenops.scheduler.api import create_app

NOW = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)
ADMIN = "reservations-admin-token"  # the bootstrap admin: every tenant and path


def body(**over) -> dict:
    # One zone and a deadline exactly one run away: there is a single possible slot.
    b = {"eligible_regions": ["FR"], "deadline": "2027-01-10T05:00:00Z", "duration": 2, "cpu": 8, "memory": 16}
    b.update(over)
    return b


@pytest.fixture
def store(tmp_path):
    s = ReservationStore(f"sqlite:///{tmp_path / 'reservations.db'}")
    yield s
    s.close()


def authorized(app, token: str = ADMIN) -> TestClient:
    return TestClient(app, headers={"Authorization": f"Bearer {token}"})


def issue(client: TestClient, name: str, tenants: list[str], paths=("pulumi", "api")) -> str:
    """A write token for ``tenants``, issued by the admin ``client``."""
    r = client.post("/credentials", json={"name": name, "tenants": tenants, "paths": list(paths)})
    assert r.status_code == 201, r.text
    return r.json()["token"]


@pytest.fixture
def client(store):
    return authorized(
        create_app(ProfileSource(), capacity_vcpu=8, clock=lambda: NOW, store=store, admin_tokens=[ADMIN])
    )


def test_a_retry_with_the_same_key_gets_the_same_answer_and_books_nothing(client, store):
    first = client.post("/scheduling", json=body(key="dev/etl"))
    assert first.status_code == 200 and first.json()["key"] == "dev/etl"
    again = client.post("/scheduling", json=body(key="dev/etl", req_timeout=3))  # a retry may change its timeout
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert [r["key"] for r in store.list()] == ["dev/etl"]
    # without a key, the identical request is a second job: the only slot is taken
    other = client.post("/scheduling", json=body())
    assert other.status_code == 409 and "capacity" in other.json()["detail"]


def test_put_is_the_same_booking_by_its_path_key(client):
    a = client.put("/reservations/ns/vm/uid-1", json=body())
    b = client.post("/scheduling", json=body(key="ns/vm/uid-1"))
    assert a.status_code == b.status_code == 200 and a.json() == b.json()
    mismatch = client.put("/reservations/ns/vm/uid-1", json=body(key="ns/vm/uid-2"))
    assert mismatch.status_code == 422 and mismatch.json()["detail"].startswith("key: ns/vm/uid-2 differs")


def test_a_changed_request_replaces_the_booking_atomically(client, store):
    assert client.post("/scheduling", json=body(key="k")).status_code == 200
    smaller = client.post("/scheduling", json=body(key="k", cpu=4))
    assert smaller.status_code == 200 and "idempotent-replayed" not in smaller.headers
    [row] = store.list()
    assert row["milli_cpu"] == 4000 and row["revision"] == 2
    # the 4 vCPUs given back are free for somebody else; 5 are not
    assert client.post("/scheduling", json=body(key="other", cpu=4)).status_code == 200
    assert client.post("/scheduling", json=body(key="third", cpu=1)).status_code == 409


def test_delete_releases_and_a_retried_delete_changes_nothing(client, store):
    assert client.post("/scheduling", json=body(key="k")).status_code == 200
    gone = client.delete("/reservations/k", params={"reason": "stack destroyed"})
    assert gone.status_code == 200 and gone.json()["phase"] == "Released" and gone.json()["reason"] == "stack destroyed"
    again = client.delete("/reservations/k")
    assert again.status_code == 200 and again.json()["revision"] == gone.json()["revision"]
    assert client.delete("/reservations/never").status_code == 404
    assert client.post("/scheduling", json=body(key="next")).status_code == 200  # the slot is free again
    assert [r["key"] for r in store.list()] == ["next"]
    # the same key booked again after its release is a new booking
    assert client.post("/scheduling", json=body(key="k", cpu=0.5, eligible_regions=["FR", "DE"])).status_code == 200


def test_a_dry_run_books_nothing(client, store):
    dry = client.post("/scheduling", json=body(key="k", dry_run=True))
    assert dry.status_code == 200 and dry.json()["key"] is None
    assert store.list(ListingFilter(all=True)) == []
    real = client.post("/scheduling", json=body(key="k"))
    assert real.status_code == 200 and real.json()["scheduling_time"] == dry.json()["scheduling_time"]


def test_quota_counts_every_active_reservation_of_the_tenant(client):
    wide = dict(
        eligible_regions=["FR", "DE", "PL"],
        deadline="2027-01-11T03:00:00Z",
        cpu=4,
        tenant="team-a",
        tenant_quota_vcpu=8,
    )
    assert client.post("/scheduling", json=body(key="a", path="pulumi", **wide)).status_code == 200
    assert client.post("/scheduling", json=body(key="b", path="cluster", **wide)).status_code == 200
    refused = client.post("/scheduling", json=body(key="c", path="cluster", **wide))
    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        "tenant: tenant team-a would use 12 vCPU, above its quota of 8 (8 in active "
        "reservations of either path + 4 requested)"
    )
    assert client.post("/scheduling", json=body(key="b", path="cluster", **wide)).status_code == 200  # a retry
    assert client.post("/scheduling", json=body(key="c", **{**wide, "tenant": "team-b"})).status_code == 200
    done = client.patch("/reservations/a", json={"phase": "Completed", "reason": "ran 2h"})
    assert done.status_code == 200 and done.json()["phase"] == "Completed"
    assert client.post("/scheduling", json=body(key="c2", path="cluster", **wide)).status_code == 200
    # a late report never revives a terminal reservation
    assert client.patch("/reservations/a", json={"phase": "Running"}).json()["phase"] == "Completed"


def test_the_quota_is_policys_when_the_body_names_none(store):
    policy = PolicySettings(tenant_vcpu_quota={"team-a": 8}, default_tenant_vcpu_quota=None)
    admin = authorized(create_app(ProfileSource(), clock=lambda: NOW, store=store, admin_tokens=[ADMIN], policy=policy))
    team_a = authorized(admin.app, issue(admin, "team-a-ci", ["team-a"]))
    wide = dict(eligible_regions=["FR", "DE", "PL"], deadline="2027-01-11T03:00:00Z", cpu=4)
    assert team_a.post("/scheduling", json=body(key="a", **wide)).status_code == 200  # its only tenant
    assert team_a.post("/scheduling", json=body(key="b", **wide)).status_code == 200
    refused = team_a.post("/scheduling", json=body(key="c", **wide))
    assert refused.status_code == 409 and refused.json()["detail"].startswith(
        "tenant: tenant team-a would use 12 vCPU, above its quota of 8"
    )
    # a body may not raise it
    above = team_a.post("/scheduling", json=body(key="c", tenant_quota_vcpu=64, **wide))
    assert above.status_code == 403 and "quota of 8" in above.json()["detail"]
    # a tenant without a quota in policy has none
    assert admin.post("/scheduling", json=body(key="d", tenant="team-b", **{**wide, "cpu": 32})).status_code == 200


def test_the_listing_filters_by_tenant_zone_and_region(client):
    wide = dict(
        eligible_regions=["FR", "DE"],
        deadline="2027-01-11T03:00:00Z",
        cpu=1,
        regions={"FR": "azure/francecentral", "DE": "gcp/europe-west3"},
    )
    for key, tenant in (("x", "team-a"), ("y", "team-b")):
        assert (
            client.post("/scheduling", json=body(key=key, tenant=tenant, workload={"name": key}, **wide)).status_code
            == 200
        )
    listed = client.get("/reservations").json()["reservations"]
    assert {r["key"] for r in listed} == {"x", "y"}
    x = next(r for r in listed if r["key"] == "x")
    assert f"{x['provider']}/{x['region']}" == wide["regions"][x["zone"]] and x["workload"] == {"name": "x"}
    assert [r["key"] for r in client.get("/reservations", params={"tenant": "team-b"}).json()["reservations"]] == ["y"]
    by_region = client.get("/reservations", params={"region": x["region"]}).json()["reservations"]
    assert "x" in {r["key"] for r in by_region} and all(r["region"] == x["region"] for r in by_region)
    client.delete("/reservations/x")
    assert [r["key"] for r in client.get("/reservations").json()["reservations"]] == ["y"]
    assert {r["key"] for r in client.get("/reservations", params={"all": True}).json()["reservations"]} == {"x", "y"}


def test_bad_fields_are_named(client):
    r = client.post("/scheduling", json=body(key="k", tenant="Team A"))
    assert r.status_code == 422 and r.json()["detail"].startswith("tenant:")
    r = client.post("/scheduling", json=body(key="k", regions={"FR": "oracle/paris"}))
    assert r.status_code == 422 and r.json()["detail"].startswith("regions.FR:")
    r = client.patch("/reservations/k", json={"phase": "Released"})
    assert r.status_code == 422 and r.json()["detail"].startswith("phase:")
    assert client.patch("/reservations/unknown", json={"phase": "Running"}).status_code == 404


def test_a_principal_over_its_rate_limit_gets_429_and_others_go_on(store):
    admin = authorized(
        create_app(ProfileSource(), clock=lambda: NOW, store=store, rate_limit="3/minute", admin_tokens=[ADMIN])
    )
    noisy = authorized(admin.app, issue(admin, "noisy-ci", ["noisy", "noisy-2"]))
    quiet = authorized(admin.app, issue(admin, "quiet-ci", ["quiet"]))
    wide = dict(eligible_regions=["FR", "DE"], deadline="2027-01-11T03:00:00Z", cpu=1)
    codes = [noisy.post("/scheduling", json=body(key=f"k{i}", tenant="noisy", **wide)).status_code for i in range(4)]
    assert codes == [200, 200, 200, 429]
    # the limit is the principal's: naming its other tenant in the body does not dodge it
    r = noisy.post("/scheduling", json=body(key="k9", tenant="noisy-2", **wide))
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert r.json()["detail"].startswith("rate limit: principal noisy-ci sent more than 3/minute scheduling requests")
    assert quiet.post("/scheduling", json=body(key="q", **wide)).status_code == 200
    assert {row["key"] for row in store.list()} == {"k0", "k1", "k2", "q"}
    assert {row["tenant"] for row in store.list()} == {"noisy", "quiet"}


def test_a_retry_with_a_later_clock_keeps_its_booking_until_the_clock_passes_its_start(client, store):
    wide = dict(eligible_regions=["FR", "DE"], deadline="2027-01-13T03:00:00Z", cpu=1)
    first = client.post("/scheduling", json=body(key="k", earliest_start="2027-01-10T03:00:00Z", **wide)).json()
    start = datetime.fromisoformat(first["scheduling_time"].replace("Z", "+00:00"))
    # a retry whose clock has moved on, but not past the booked start: the same booking
    same = client.post("/scheduling", json=body(key="k", earliest_start=first["scheduling_time"], **wide))
    assert same.headers.get("idempotent-replayed") == "true" and same.json() == first
    # a clock past the booked start (a missed window): the booking is replaced, under the same key
    later = stamp(start + timedelta(hours=1))
    moved = client.post("/scheduling", json=body(key="k", earliest_start=later, **wide))
    assert moved.status_code == 200 and "idempotent-replayed" not in moved.headers
    assert moved.json()["scheduling_time"] >= later
    assert [(r["key"], r["revision"]) for r in store.list()] == [("k", 2)]


def test_the_listing_reads_the_start_as_the_answer_does(client):
    answer = client.post(
        "/scheduling", json=body(key="k", eligible_regions=["FR", "DE"], deadline="2027-01-11T03:00:00Z", cpu=1)
    ).json()
    [row] = client.get("/reservations").json()["reservations"]
    assert row["start"].replace("+00:00", "Z") == answer["scheduling_time"]
    assert row["updated_at"].endswith(("Z", "+00:00"))


def test_the_record_keeps_the_windows_weighed_and_policys_explanation(client):
    """What `greenops explain` reads: each zone's best window with room and its run-now intensity, best first,
    in the stored answer; policy's explanation as sent, which is no part of the spec (a retry that
    sends another one is the same booking)."""
    why = {"constraintChain": [{"constraint": "providers azure", "remaining": 57}], "zones": {}}
    b = body(key="dev/etl", eligible_regions=["FR", "DE", "GB"], deadline="2027-01-10T20:00:00Z", explanation=why)
    answer = client.post("/scheduling", json=b).json()
    weighed = answer["considered"]
    assert sorted(c["scheduling_location"] for c in weighed) == ["DE", "FR", "GB"]
    assert [c["expected_intensity"] for c in weighed] == sorted(c["expected_intensity"] for c in weighed)
    assert weighed[0]["scheduling_location"] == answer["scheduling_location"]
    assert weighed[0]["scheduling_time"] == answer["scheduling_time"]
    assert all(c["expected_intensity"] <= c["run_now_intensity"] for c in weighed)
    retry = client.post("/scheduling", json={**b, "explanation": {"constraintChain": []}})
    assert retry.headers.get("idempotent-replayed") == "true"
    recorded = client.get("/reservations/dev/etl").json()
    assert recorded["answer"] == answer and recorded["explanation"] == why
    listed = client.get("/reservations", params={"detail": "true"}).json()["reservations"]
    assert listed[0]["explanation"] == why
    assert client.get("/reservations").json()["reservations"][0]["explanation"] is None  # only with detail


def test_a_zone_without_room_is_not_among_the_windows_weighed(client):
    assert client.post("/scheduling", json=body(key="dev/first")).status_code == 200  # FR's only slot
    answer = client.post("/scheduling", json=body(key="dev/second", eligible_regions=["FR", "DE"])).json()
    assert answer["scheduling_location"] == "DE"
    assert [c["scheduling_location"] for c in answer["considered"]] == ["DE"]


def test_the_search_start_is_recorded_with_each_booking_and_keys_are_listed_by_prefix(client):
    """The baseline runs from where the search began: recorded in the answer, so a re-booking (a
    changed spec, a later earliest start) shows its own, not the first booking's."""
    first = client.post("/scheduling", json=body(key="dev/etl/a1")).json()
    assert first["searched_from"] == "2027-01-10T03:00:00Z"  # the clock
    later = body(key="dev/etl/a1", deadline="2027-01-10T09:00:00Z", earliest_start="2027-01-10T04:30:00Z")
    assert client.post("/scheduling", json=later).json()["searched_from"] == "2027-01-10T04:30:00Z"
    assert client.get("/reservations/dev/etl/a1").json()["searched_from"] == "2027-01-10T04:30:00Z"
    client.put("/reservations/dev/etl-two/b2", json=body(eligible_regions=["DE"]))
    listed = client.get("/reservations", params={"key_prefix": "dev/etl/"}).json()["reservations"]
    assert [r["key"] for r in listed] == ["dev/etl/a1"]  # not dev/etl-two/...


def test_the_workload_is_served_back_as_sent(client):
    sent = {"name": "x", "originRegion": "italynorth"}
    assert client.post("/scheduling", json=body(key="x", workload=sent)).status_code == 200
    assert client.get("/reservations/x").json()["workload"] == sent
    assert client.get("/reservations").json()["reservations"][0]["workload"] == sent


def test_a_run_under_way_is_listed_past_its_booked_end_until_its_final_phase(store):
    """A VM whose gate opened late runs after the end its booking counted: the listing (what the
    controller's lifecycle pass reads) keeps it until it is recorded Completed, so it is retired."""
    now = [NOW]
    client = authorized(
        create_app(ProfileSource(), capacity_vcpu=64, clock=lambda: now[0], store=store, admin_tokens=[ADMIN])
    )
    for key in ("late", "idle"):
        assert client.post("/scheduling", json=body(key=key, cpu=2)).status_code == 200
    assert client.patch("/reservations/late", json={"phase": "Provisioning"}).status_code == 200
    assert client.patch("/reservations/late", json={"phase": "Running"}).status_code == 200
    (late,) = [r for r in store.list(ListingFilter(all=True)) if r["key"] == "late"]
    now[0] = late["end_at"].replace(tzinfo=UTC) + timedelta(minutes=5)  # past both bookings' end
    listed = [r["key"] for r in client.get("/reservations").json()["reservations"]]
    assert listed == ["late"]  # the Scheduled one whose window passed is not; the Running one is
    assert client.patch("/reservations/late", json={"phase": "Completed"}).status_code == 200
    assert client.get("/reservations").json()["reservations"] == []
