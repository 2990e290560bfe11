"""Key squatting against the real scheduler, on SQLite and on a real PostgreSQL: a Pulumi-path key is
predictable (stack/workload/spec digest), so another tenant can book it first. Keys belong to their
tenants (issue 44, part): a tenant's booking reads and writes its own (tenant, key) only, so the
squatter's row is its own business, the rightful tenant books as if it were not there, and no answer
says who else holds the key."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from greenops.common.clock import parse_time
from greenops.controller.record import Record
from greenops.controller.record_keeper import RESERVATION_ANNOTATION, RecordKeeper
from greenops.local.postgres import PostgresServer
from greenops.local.scheduler import SchedulerServer
from greenops.reservations import ReservationStore
from greenops.reservations.tables import slot_usage
from tests.support.bookings import NOW, booking
from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.integration

CAPACITY = 16  # vCPUs per zone-hour: small enough that two bookings of one key fill an hour
# a 2 h run due within 2 h of the scheduler's clock, in one zone: its only start is now
DUE_NOW = {"eligible_regions": ["PL"], "deadline": "2027-01-10T05:00:00Z", "duration": 2}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def tenancy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    log = tmp_path_factory.mktemp(f"keys-{request.param}") / "scheduler.log"
    with PostgresServer() if request.param == "postgresql" else contextlib.nullcontext() as pg:
        database = pg.url if pg is not None else None
        with SchedulerServer(log=log, env={"GREENOPS_NOW": NOW}, database=database, capacity_vcpu=CAPACITY) as sched:
            yield Tenancy.issued(sched)


def book(tenancy: Tenancy, token: str, key: str, **over: object) -> httpx.Response:
    return tenancy.call("POST", "/scheduling", token, json=booking(key=key, **over))


def test_a_squatted_key_still_books_for_its_rightful_tenant(tenancy: Tenancy):
    key = "prod/etl/0f3a9c"  # <stack>/<workload>/<spec digest>: anyone can work it out
    squat = book(tenancy, tenancy.team_b, key)
    assert squat.status_code == 200, squat.text
    squatters = tenancy.row(key, tenant="team-b")
    rightful = book(tenancy, tenancy.team_a, key, cpu=2)
    assert rightful.status_code == 200, rightful.text
    assert "idempotent-replayed" not in rightful.headers  # its own booking, not the squatter's answer
    assert rightful.json()["key"] == key
    own = tenancy.row(key, tenant="team-a")
    assert own is not None and own["milli_cpu"] == 2000 and own["answer"] == rightful.json()
    assert tenancy.row(key, tenant="team-b") == squatters  # the squatter's row untouched
    # neither sees the other: each reads its own row, and each listing shows its own
    for token, tenant, cpu in ((tenancy.team_a, "team-a", 2), (tenancy.team_b, "team-b", 4)):
        got = tenancy.call("GET", f"/reservations/{key}", token)
        assert got.status_code == 200 and (got.json()["tenant"], got.json()["cpu"]) == (tenant, cpu)
        listed = tenancy.call("GET", f"/reservations?key_prefix={key}", token).json()["reservations"]
        assert [(r["key"], r["tenant"]) for r in listed] == [(key, tenant)]
        other = "team-b" if tenant == "team-a" else "team-a"
        assert other not in got.text and other not in str(listed)


def test_the_squatters_get_patch_and_delete_act_on_its_own_row_only(tenancy: Tenancy):
    key = "prod/api/7d21be"
    assert book(tenancy, tenancy.team_a, key).status_code == 200
    assert book(tenancy, tenancy.team_b, key).status_code == 200
    teams = tenancy.row(key, tenant="team-a")
    patched = tenancy.call("PATCH", f"/reservations/{key}", tenancy.team_b, json={"phase": "Running"})
    assert patched.status_code == 200, patched.text
    assert (patched.json()["tenant"], patched.json()["phase"]) == ("team-b", "Running")
    released = tenancy.call("DELETE", f"/reservations/{key}?reason=squatter", tenancy.team_b)
    assert released.status_code == 200, released.text
    assert (released.json()["tenant"], released.json()["phase"]) == ("team-b", "Released")
    assert tenancy.row(key, tenant="team-a") == teams  # the rightful tenant's row untouched
    read = tenancy.call("GET", f"/reservations/{key}", tenancy.team_b).json()
    assert (read["tenant"], read["phase"]) == ("team-b", "Released")
    # a key only team-a holds is to team-b byte for byte an absent one, whatever tenant it names
    only = "prod/only-a/55aa01"
    assert book(tenancy, tenancy.team_a, only).status_code == 200
    absent = tenancy.call("GET", "/reservations/prod/never/000000", tenancy.team_b)
    for method, path, body in (
        ("GET", f"/reservations/{only}", None),
        ("GET", f"/reservations/{only}?tenant=team-a", None),
        ("PATCH", f"/reservations/{only}", {"phase": "Failed"}),
        ("DELETE", f"/reservations/{only}?tenant=team-a", None),
        ("POST", f"/reservations/{only}/completion-token", None),
    ):
        r = tenancy.call(method, path, tenancy.team_b, json=body)
        assert (r.status_code, r.content) == (404, absent.content.replace(b"prod/never/000000", only.encode()))
    assert tenancy.row(only, tenant="team-a")["phase"] == "Scheduled"


def test_an_admin_names_the_tenant_of_a_key_two_tenants_hold(tenancy: Tenancy):
    key = "prod/shared/c0ffee"
    admin = tenancy.sched.admin_token
    assert book(tenancy, tenancy.team_a, key).status_code == 200
    alone = tenancy.call("GET", f"/reservations/{key}", admin)
    assert alone.status_code == 200 and alone.json()["tenant"] == "team-a"  # one holder: no need to name it
    assert book(tenancy, tenancy.team_b, key, cpu=2).status_code == 200
    for method, path, body in (
        ("GET", f"/reservations/{key}", None),
        ("PATCH", f"/reservations/{key}", {"phase": "Running"}),
        ("DELETE", f"/reservations/{key}", None),
        ("POST", f"/reservations/{key}/completion-token", None),
    ):
        r = tenancy.call(method, path, admin, json=body)
        assert r.status_code == 409, (method, r.text)
        assert key in r.json()["detail"] and "?tenant=" in r.json()["detail"]
    for tenant, cpu in (("team-a", 4), ("team-b", 2)):
        r = tenancy.call("GET", f"/reservations/{key}?tenant={tenant}", admin)
        assert r.status_code == 200 and (r.json()["tenant"], r.json()["cpu"]) == (tenant, cpu)
        r = tenancy.call("GET", f"/reservations/{key}?tenant={tenant}", tenancy.reader)
        assert r.status_code == 200 and r.json()["tenant"] == tenant
    nobody = tenancy.call("GET", f"/reservations/{key}?tenant=media", admin)
    assert (nobody.status_code, nobody.json()) == (404, {"detail": f"reservation {key}: no such key"})
    done = tenancy.call("DELETE", f"/reservations/{key}?tenant=team-b&reason=admin", admin)
    assert done.status_code == 200 and (done.json()["tenant"], done.json()["phase"]) == ("team-b", "Released")
    assert tenancy.row(key, tenant="team-a")["phase"] == "Scheduled"
    # the listing keeps both rows apart: one entry per tenant, never merged
    listed = tenancy.call("GET", f"/reservations?all=true&key_prefix={key}", admin).json()["reservations"]
    assert sorted((r["tenant"], r["phase"]) for r in listed) == [("team-a", "Scheduled"), ("team-b", "Released")]
    page = tenancy.call("GET", "/dashboard/api/placements", tenancy.reader).json()["placements"]
    assert sorted(p["tenant"] for p in page if p["key"] == key) == ["team-a", "team-b"]
    for tenant in ("team-a", "team-b"):
        explained = tenancy.call("GET", f"/dashboard/explain/{key}?tenant={tenant}", tenancy.reader)
        assert explained.status_code == 200 and tenant in explained.text


def test_the_cluster_paths_principal_names_the_tenant_it_releases(tenancy: Tenancy):
    key = "ns/vm/3b4a4958"  # a forged uid: two namespaces' tenants book the same cluster key
    for tenant in ("team-a", "team-b"):
        r = tenancy.call("POST", "/scheduling", tenancy.opa, json=booking(key=key, tenant=tenant, path="cluster"))
        assert r.status_code == 200, r.text
    unnamed = tenancy.call("DELETE", f"/reservations/{key}", tenancy.opa)
    assert unnamed.status_code == 409 and "?tenant=" in unnamed.json()["detail"]
    named = tenancy.call("DELETE", f"/reservations/{key}?tenant=team-a&reason=denied", tenancy.opa)
    assert named.status_code == 200 and named.json()["tenant"] == "team-a"
    assert tenancy.row(key, tenant="team-a")["phase"] == "Released"
    assert tenancy.row(key, tenant="team-b")["phase"] == "Scheduled"


def test_retries_replay_per_tenant(tenancy: Tenancy):
    key = "prod/batch/9e8d7c"
    first = {t: book(tenancy, token, key) for t, token in (("a", tenancy.team_a), ("b", tenancy.team_b))}
    assert all(r.status_code == 200 for r in first.values())
    for t, token in (("a", tenancy.team_a), ("b", tenancy.team_b)):
        again = book(tenancy, token, key)
        assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true"
        assert again.json() == first[t].json()
    # a changed spec replaces the caller's own booking, never the other tenant's
    changed = book(tenancy, tenancy.team_b, key, cpu=1)
    assert changed.status_code == 200 and "idempotent-replayed" not in changed.headers
    assert tenancy.row(key, tenant="team-b")["revision"] == 2
    assert tenancy.row(key, tenant="team-a")["revision"] == 1
    again = book(tenancy, tenancy.team_a, key)
    assert again.headers.get("idempotent-replayed") == "true" and again.json() == first["a"].json()


def test_capacity_counts_both_rows_of_one_key(tenancy: Tenancy):
    key = "prod/gpu/1a2b3c"
    # PL's only start is now, for 2 h: 6 + 6 vCPUs of the one key fit in 16, 6 more do not
    assert book(tenancy, tenancy.team_a, key, cpu=6, **DUE_NOW).status_code == 200
    second = book(tenancy, tenancy.team_b, key, cpu=6, **DUE_NOW)
    assert second.status_code == 200, second.text
    full = book(tenancy, tenancy.media, "media/late", cpu=6, **DUE_NOW)
    assert full.status_code == 409, full.text
    store = ReservationStore(tenancy.sched.database or "")
    try:
        with store.reading("test") as conn:
            used = {r.slot: r.milli_cpu for r in conn.execute(slot_usage.select().where(slot_usage.c.zone == "PL"))}
    finally:
        store.close()
    assert max(used.values()) >= 12_000
    # the second tenant's release gives back its own hours only
    gone = tenancy.call("DELETE", f"/reservations/{key}", tenancy.team_b)
    assert gone.status_code == 200 and gone.json()["tenant"] == "team-b"
    assert book(tenancy, tenancy.media, "media/late", cpu=6, **DUE_NOW).status_code == 200
    assert book(tenancy, tenancy.media, "media/later", cpu=6, **DUE_NOW).status_code == 409


def test_a_completion_token_reports_for_its_own_tenants_row(tenancy: Tenancy):
    key = "prod/report/4d5e6f"
    tokens = {}
    for tenant, token in (("team-a", tenancy.team_a), ("team-b", tenancy.team_b)):
        assert book(tenancy, token, key).status_code == 200
        minted = tenancy.call("POST", f"/reservations/{key}/completion-token", token)
        assert minted.status_code == 201, minted.text
        tokens[tenant] = minted.json()["token"]
    r = tenancy.call("POST", f"/reservations/{key}/completion", tokens["team-b"], json={"exitStatus": 3})
    assert r.status_code == 200 and (r.json()["tenant"], r.json()["completion"]["exitStatus"]) == ("team-b", 3)
    assert tenancy.row(key, tenant="team-a")["completion"] is None
    r = tenancy.call("POST", f"/reservations/{key}/completion", tokens["team-a"], json={"exitStatus": 0})
    assert r.status_code == 200 and (r.json()["tenant"], r.json()["completion"]["exitStatus"]) == ("team-a", 0)


def test_the_controller_keeps_each_objects_own_tenants_reservation(tenancy: Tenancy):
    """Two tenants hold one cluster key: the controller confirms and releases by the object's tenant
    (its spec.tenant, as admission wrote it), never the other's row of the key, nor both as one."""
    key = "shop/vm/7c1d2e3f"
    for tenant in ("team-a", "team-b"):
        r = tenancy.call("POST", "/scheduling", tenancy.opa, json=booking(key=key, tenant=tenant, path="cluster"))
        assert r.status_code == 200, r.text
    obj = {
        "metadata": {"namespace": "shop", "name": "vm", "annotations": {RESERVATION_ANNOTATION: key}},
        "spec": {"tenant": "team-a"},
    }
    controller = tenancy.sched.issue("controller", None, ["cluster"], role="report")
    record = Record(tenancy.sched.url, lambda: controller)
    try:
        soon = RecordKeeper(record, lambda: parse_time(NOW) + timedelta(seconds=5), lambda: True)
        soon.sweep(lambda: ([obj], "7"))
        assert tenancy.row(key, tenant="team-a")["held_until"] is None  # its object is stored: confirmed
        assert tenancy.row(key, tenant="team-b")["held_until"] is not None  # another tenant's hold, left alone
        later = RecordKeeper(record, lambda: parse_time(NOW) + timedelta(hours=1), lambda: True)
        later.sweep(lambda: ([obj], "8"))
        assert tenancy.row(key, tenant="team-b")["phase"] == "Released"  # no object of team-b's: expired
        assert tenancy.row(key, tenant="team-a")["phase"] == "Scheduled"
        later.deleted(obj)
        assert tenancy.row(key, tenant="team-a")["phase"] == "Released"
    finally:
        record.close()
