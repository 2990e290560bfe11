"""The tenancy audit's second round, on credentials: a token issues, lists and revokes tokens only
within its own scopes, and an expiry is compared in UTC whatever offset it was written with.
Against the real scheduler process; each refusal names its reason and changes nothing."""

from __future__ import annotations

from datetime import timedelta, timezone

import pytest

from greenops.common.clock import parse_time
from tests.support.bookings import NOW
from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.integration


def _issue(tenancy: Tenancy, caller: str, **body: object):
    return tenancy.call("POST", "/credentials", caller, json={"name": "minted", **body})


@pytest.fixture(scope="module")
def scoped_admin(tenancy: Tenancy) -> str:
    """An admin for team-a on the Pulumi path only: what a platform team gives a tenant's lead."""
    return tenancy.sched.issue("team-a-admin", ["team-a"], paths=["pulumi"], role="admin")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"role": "admin", "tenants": None, "paths": ["pulumi", "cluster", "api"]}, "admin token for every tenant"),
        ({"role": "read", "tenants": None, "paths": ["pulumi"]}, "read token for every tenant"),
        ({"role": "write", "tenants": ["team-b"], "paths": ["pulumi"]}, "write token for tenant(s) team-b"),
        ({"role": "write", "tenants": ["team-a", "team-b"], "paths": ["pulumi"]}, "tenant(s) team-a, team-b"),
        ({"role": "write", "tenants": ["team-a"], "paths": ["cluster"]}, "on path(s) cluster"),
    ],
)
def test_a_scoped_admin_cannot_mint_beyond_its_scope(tenancy: Tenancy, scoped_admin: str, body, reason):
    before = tenancy.call("GET", "/credentials", tenancy.sched.admin_token).json()["credentials"]
    r = _issue(tenancy, scoped_admin, **body)
    assert r.status_code == 403, r.text
    assert reason in r.json()["detail"] and "team-a-admin" in r.json()["detail"]
    assert tenancy.call("GET", "/credentials", tenancy.sched.admin_token).json()["credentials"] == before


def test_a_scoped_admin_mints_within_its_scope(tenancy: Tenancy, scoped_admin: str):
    r = _issue(tenancy, scoped_admin, role="write", tenants=["team-a"], paths=["pulumi"])
    assert r.status_code == 201, r.text
    minted = r.json()["token"]
    assert tenancy.call("GET", "/reservations?tenant=team-a", minted).status_code == 200
    assert tenancy.call("GET", "/reservations?tenant=team-b", minted).status_code == 403


def test_a_scoped_admin_lists_and_revokes_only_its_tenants_tokens(tenancy: Tenancy, scoped_admin: str):
    everyone = tenancy.call("GET", "/credentials", tenancy.sched.admin_token).json()["credentials"]
    seen = tenancy.call("GET", "/credentials", scoped_admin).json()["credentials"]
    assert {c["name"] for c in seen} >= {"team-a-ci"}
    assert not {c["name"] for c in seen} & {"team-b-ci", "media-ci", "opa", "dashboard"}
    assert all(c["tenants"] == ["team-a"] for c in seen)
    [team_b] = [c for c in everyone if c["name"] == "team-b-ci"]
    r = tenancy.call("DELETE", f"/credentials/{team_b['id']}", scoped_admin)
    assert r.status_code == 404, r.text  # as if absent: its existence is not the caller's to know
    assert tenancy.call("GET", "/reservations?tenant=team-b", tenancy.team_b).status_code == 200


def test_an_expiry_written_with_an_offset_is_compared_in_utc(tenancy: Tenancy):
    """One minute ago, written at +14:00: expired now. Stored as its wall time, SQLite read it as
    fourteen hours later and the token kept working."""
    plus_14 = timezone(timedelta(hours=14))
    expired = (parse_time(NOW) - timedelta(minutes=1)).astimezone(plus_14).isoformat()
    r = _issue(tenancy, tenancy.sched.admin_token, role="read", tenants=["team-a"], paths=["api"], expires_at=expired)
    assert r.status_code == 201, r.text
    refused = tenancy.call("GET", "/reservations?tenant=team-a", r.json()["token"])
    assert refused.status_code == 401 and "expired" in refused.json()["detail"]
    listed = tenancy.call("GET", "/credentials", tenancy.sched.admin_token).json()["credentials"]
    [row] = [c for c in listed if c["id"] == r.json()["id"]]
    assert row["expires_at"] == (parse_time(NOW) - timedelta(minutes=1)).isoformat()
