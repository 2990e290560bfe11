"""A hostile tenant against the real scheduler process: every attack of the tenancy audit is one
test, refused with a named reason, and the record is unchanged afterwards."""

from __future__ import annotations

import pytest

from tests.support.bookings import booking
from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.integration

ROUTES = [
    ("POST", "/scheduling"),
    ("PUT", "/reservations/team-a/x"),
    ("PATCH", "/reservations/team-a/x"),
    ("DELETE", "/reservations/team-a/x"),
    ("GET", "/reservations"),
    ("GET", "/reservations/team-a/x"),
    ("GET", "/dashboard"),
    ("GET", "/dashboard/api/placements"),
    ("GET", "/forecast/FR"),
    ("GET", "/credentials"),
    ("POST", "/credentials"),
    ("GET", "/metrics"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_but_health_needs_a_credential(tenancy: Tenancy, method: str, path: str):
    for token in (None, "not-a-token", "gos_forged", "a.b.c"):
        r = tenancy.call(method, path, token, json=booking() if method in ("POST", "PUT") else None)
        assert r.status_code == 401, (method, path, token, r.text)
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.json()["detail"].startswith("unauthenticated: ")
    assert tenancy.call("GET", "/healthz", None).status_code == 200


def test_a_body_naming_another_tenant_is_403_naming_both(tenancy: Tenancy):
    r = tenancy.call("PUT", "/reservations/team-b/prod-db", tenancy.team_a, json=booking(tenant="team-b"))
    assert r.status_code == 403
    assert "team-a-ci" in r.json()["detail"] and "tenant team-b" in r.json()["detail"]
    assert tenancy.row("team-b/prod-db") is None


def test_a_body_cannot_choose_the_path(tenancy: Tenancy):
    r = tenancy.call("PUT", "/reservations/team-a/c", tenancy.team_a, json=booking(path="cluster"))
    assert r.status_code == 403 and "may not book on path cluster" in r.json()["detail"]
    assert tenancy.row("team-a/c") is None


def test_the_tenant_and_path_are_the_principals(tenancy: Tenancy):
    r = tenancy.call("PUT", "/reservations/team-a/own", tenancy.team_a, json=booking())
    assert r.status_code == 200, r.text
    row = tenancy.row("team-a/own")
    assert row is not None and (row["tenant"], row["path"]) == ("team-a", "pulumi")


def test_another_tenant_cannot_take_over_put_patch_or_delete_a_booking(tenancy: Tenancy):
    assert tenancy.call("PUT", "/reservations/team-a/prod-db", tenancy.team_a, json=booking()).status_code == 200
    before = tenancy.row("team-a/prod-db")
    # a row of a tenant the caller may not read is answered as an absent one (round two: a 403
    # told which keys another tenant holds)
    absent = {"detail": "reservation team-a/prod-db: no such key"}
    patch = tenancy.call("PATCH", "/reservations/team-a/prod-db", tenancy.team_b, json={"phase": "Failed"})
    assert (patch.status_code, patch.json()) == (404, absent)
    delete = tenancy.call("DELETE", "/reservations/team-a/prod-db", tenancy.team_b)
    assert (delete.status_code, delete.json()) == (404, absent)
    read = tenancy.call("GET", "/reservations/team-a/prod-db", tenancy.team_b)
    assert (read.status_code, read.json()) == (404, absent)
    never = tenancy.call("GET", "/reservations/team-a/never-booked", tenancy.team_b)
    assert (never.status_code, never.json()["detail"]) == (404, "reservation team-a/never-booked: no such key")
    # keys belong to tenants (issue 44): team-b's booking of the key is team-b's own reservation, and
    # team-a's is untouched (tests/security/test_hostile_keys.py); before, a 403 named team-a
    takeover = tenancy.call("PUT", "/reservations/team-a/prod-db", tenancy.team_b, json=booking(cpu=8))
    assert takeover.status_code == 200, takeover.text
    assert tenancy.row("team-a/prod-db", tenant="team-a") == before


def test_opas_credential_acts_only_on_cluster_path_keys(tenancy: Tenancy):
    assert tenancy.call("PUT", "/reservations/stack/etl", tenancy.team_a, json=booking()).status_code == 200
    before = tenancy.row("stack/etl")
    assert tenancy.call("DELETE", "/reservations/stack/etl?reason=forged", tenancy.opa).status_code == 403
    assert tenancy.call("PATCH", "/reservations/stack/etl", tenancy.opa, json={"phase": "Failed"}).status_code == 403
    r = tenancy.call("PUT", "/reservations/stack/etl", tenancy.opa, json=booking(tenant="team-a", path="cluster"))
    assert r.status_code == 403 and "on path pulumi" in r.json()["detail"]
    assert tenancy.row("stack/etl") == before
    # its own kind of booking it may make, for any namespace's tenant
    ok = tenancy.call("PUT", "/reservations/ns/vm/uid-1", tenancy.opa, json=booking(tenant="team-b", path="cluster"))
    assert ok.status_code == 200, ok.text


def test_the_quota_is_policys_not_the_bodys(tenancy: Tenancy):
    # media's quota is 128 vCPU in the policy settings the bundle ships
    assert tenancy.call("PUT", "/reservations/media/a", tenancy.media, json=booking(cpu=100)).status_code == 200
    omitted = tenancy.call("PUT", "/reservations/media/b", tenancy.media, json=booking(cpu=64))
    assert omitted.status_code == 409 and "above its quota of 128" in omitted.json()["detail"]
    inflated = tenancy.call(
        "PUT", "/reservations/media/c", tenancy.media, json=booking(cpu=64, tenant_quota_vcpu=10000)
    )
    assert inflated.status_code == 403
    assert "tenant_quota_vcpu: 10000 is above tenant media's quota of 128" in inflated.json()["detail"]
    assert tenancy.row("media/b") is None and tenancy.row("media/c") is None


def test_a_reader_reads_and_writes_nothing(tenancy: Tenancy):
    tenancy.call("PUT", "/reservations/team-b/r", tenancy.team_b, json=booking())
    r = tenancy.call("PUT", "/reservations/team-b/r2", tenancy.reader, json=booking(tenant="team-b"))
    assert r.status_code == 403 and "needs the write role" in r.json()["detail"]
    assert tenancy.call("DELETE", "/reservations/team-b/r", tenancy.reader).status_code == 403
    keys = {x["key"] for x in tenancy.call("GET", "/reservations", tenancy.reader).json()["reservations"]}
    assert {"team-a/prod-db", "team-b/r"} <= keys
    assert tenancy.call("GET", "/dashboard", tenancy.reader).status_code == 200


def test_a_tenants_reader_sees_only_its_tenant(tenancy: Tenancy):
    tenancy.call("PUT", "/reservations/team-a/seen", tenancy.team_a, json=booking())
    tenancy.call("PUT", "/reservations/team-b/unseen", tenancy.team_b, json=booking())
    rows = tenancy.call("GET", "/reservations", tenancy.reader_a).json()["reservations"]
    assert rows and {x["tenant"] for x in rows} == {"team-a"}
    asked = tenancy.call("GET", "/reservations?tenant=team-b", tenancy.reader_a)
    assert asked.status_code == 403 and "may not read tenant team-b" in asked.json()["detail"]
    unseen = tenancy.call("GET", "/reservations/team-b/unseen", tenancy.reader_a)
    assert (unseen.status_code, unseen.json()["detail"]) == (404, "reservation team-b/unseen: no such key")
    page = tenancy.call("GET", "/dashboard/api/placements", tenancy.reader_a).json()["placements"]
    assert page and {p["tenant"] for p in page} == {"team-a"}


def test_only_the_admin_issues_tokens(tenancy: Tenancy):
    body = {"name": "escalate", "role": "admin", "tenants": None, "paths": ["pulumi"]}
    for token in (tenancy.team_a, tenancy.opa, tenancy.reader):
        r = tenancy.call("POST", "/credentials", token, json=body)
        assert r.status_code == 403 and "needs the admin role" in r.json()["detail"]
    listed = tenancy.call("GET", "/credentials", tenancy.sched.admin_token).json()["credentials"]
    assert "escalate" not in {c["name"] for c in listed}
    assert all("token" not in c and "token_sha256" not in c for c in listed)


def test_a_write_token_for_every_tenant_is_refused_unless_it_is_the_cluster_paths(tenancy: Tenancy):
    body = {"name": "everyone", "role": "write", "tenants": None, "paths": ["pulumi"]}
    r = tenancy.call("POST", "/credentials", tenancy.sched.admin_token, json=body)
    assert r.status_code == 422 and "a write token names its tenants" in r.json()["detail"]


def test_a_revoked_token_is_refused_from_the_next_request(tenancy: Tenancy):
    made = tenancy.call(
        "POST",
        "/credentials",
        tenancy.sched.admin_token,
        json={"name": "leaked", "tenants": ["team-a"], "paths": ["pulumi"]},
    ).json()
    assert tenancy.call("GET", "/reservations", made["token"]).status_code == 200
    revoked = tenancy.call("DELETE", f"/credentials/{made['id']}", tenancy.sched.admin_token)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    r = tenancy.call("PUT", "/reservations/team-a/after-revoke", made["token"], json=booking())
    assert r.status_code == 401 and f"token {made['id']} (leaked) was revoked" in r.json()["detail"]
    assert tenancy.row("team-a/after-revoke") is None


def test_an_expired_token_is_refused(tenancy: Tenancy):
    # the scheduler's clock is pinned to 2027-01-10T03:00Z (GREENOPS_NOW)
    made = tenancy.call(
        "POST",
        "/credentials",
        tenancy.sched.admin_token,
        json={"name": "short", "tenants": ["team-a"], "expires_at": "2027-01-10T02:00:00Z"},
    ).json()
    r = tenancy.call("GET", "/reservations", made["token"])
    assert r.status_code == 401 and "expired" in r.json()["detail"]


@pytest.mark.parametrize("path", ["/openapi.json", "/dashboard/static/plotly.min.js"])
def test_only_the_health_probes_answer_without_a_credential(tenancy: Tenancy, path: str):
    """Second round: the schema and the dashboard's script were served to anyone."""
    r = tenancy.call("GET", path, None)
    assert r.status_code == 401 and r.json()["detail"].startswith("unauthenticated: ")
    assert tenancy.call("GET", path, tenancy.reader_a).status_code == 200


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_interactive_api_pages_are_not_served(tenancy: Tenancy, path: str):
    assert tenancy.call("GET", path, None).status_code == 404
    assert tenancy.call("GET", path, tenancy.reader).status_code == 404


@pytest.mark.parametrize(
    "explanation",
    [
        {"zones": ["DE", "FR"]},
        {"zones": {"DE": 3, "FR": "x"}},
        {"zones": "DE", "constraintChain": "every one"},
        {"zones": {"DE": {"provider": "azure"}}, "constraintChain": [1, {"constraint": None}]},
    ],
    ids=["zones-a-list", "zones-not-objects", "a-string-chain", "odd-steps"],
)
def test_a_stored_explanation_of_any_shape_never_takes_the_shared_views_down(tenancy: Tenancy, explanation):
    """Second round: a mis-typed but dict-shaped explanation made every tenant's dashboard 500."""
    key = f"team-a/odd-{abs(hash(str(explanation)))}"
    booked = tenancy.call("PUT", f"/reservations/{key}", tenancy.team_a, json={**booking(), "explanation": explanation})
    assert booked.status_code == 200, booked.text
    for path in ("/dashboard", "/dashboard/api/placements", f"/dashboard/explain/{key}"):
        r = tenancy.call("GET", path, tenancy.reader)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("GET", "team-a/nul%00byte"),
        ("PUT", "team-a/a%20space"),
        ("PATCH", "team-a/" + "k" * 600),
        ("DELETE", "team-a/%C3%A9t%C3%A9"),
        ("POST", "team-a/%01/completion-token"),
    ],
    ids=["nul", "space", "longer-than-the-column", "non-ascii", "control"],
)
def test_a_path_key_obeys_the_body_keys_schema(tenancy: Tenancy, method: str, key: str):
    """Second round: a path key skipped the schema the body's key obeys (a NUL byte reached the
    database: a 500 on PostgreSQL; a key longer than the column, another)."""
    body = booking() if method == "PUT" else {"phase": "Running"} if method == "PATCH" else None
    before = tenancy.call("GET", "/reservations?tenant=team-a", tenancy.team_a).json()
    r = tenancy.call(method, f"/reservations/{key}", tenancy.team_a, json=body)
    assert r.status_code == 422, (r.status_code, r.text[:300])
    assert "key" in r.text
    assert tenancy.call("GET", "/reservations?tenant=team-a", tenancy.team_a).json() == before
