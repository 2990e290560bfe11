"""API tokens verified lately are kept for a second (greenops.identity.verified), and that must not
weaken revocation or expiry: the replica that revokes refuses at once, another replica on the same
record within the second, a token refused is never kept, and expiry is checked at every use. Two
apps on one SQLite file stand for two replicas."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from greenops.identity import Principal
from greenops.identity.tokens import TokenRequest, TokenStore
from greenops.identity.verified import SECONDS, VerifiedTokens
from greenops.intensity import ProfileSource
from greenops.reservations import ReservationStore
from greenops.scheduler.api import create_app
from greenops.scheduler.auth import ADMIN as PLATFORM_ADMIN

NOW = datetime(2027, 1, 10, 3, 0, tzinfo=UTC)
ADMIN = {"Authorization": "Bearer verified-tokens-admin"}
ML = Principal(name="ml-ci", role="write", tenants=frozenset({"ml"}), paths=frozenset({"api"}))


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


class Replicas:
    def __init__(self, database: str) -> None:
        self.clock = Clock()
        self.stores = [ReservationStore(database) for _ in range(2)]
        self.a, self.b = (
            TestClient(create_app(ProfileSource(), clock=self.clock, admin_tokens=["verified-tokens-admin"], store=s))
            for s in self.stores
        )

    def issue(self, **over: object) -> dict:
        r = self.a.post("/credentials", headers=ADMIN, json={"name": "ml-ci", "tenants": ["ml"], **over})
        assert r.status_code == 201
        return r.json()


@pytest.fixture
def replicas(tmp_path):
    r = Replicas(f"sqlite:///{tmp_path / 'reservations.db'}")
    yield r
    for s in r.stores:
        s.close()


def reads(client: TestClient, token: str) -> int:
    return client.get("/reservations", headers={"Authorization": f"Bearer {token}"}).status_code


def test_a_revocation_holds_at_once_where_it_was_made_and_within_the_second_elsewhere(replicas):
    made = replicas.issue()
    assert reads(replicas.b, made["token"]) == 200  # issued through a, known to b at once
    assert reads(replicas.a, made["token"]) == 200  # both keep it now
    assert replicas.a.delete(f"/credentials/{made['id']}", headers=ADMIN).status_code == 200
    r = replicas.a.get("/reservations", headers={"Authorization": f"Bearer {made['token']}"})
    assert r.status_code == 401 and "was revoked" in r.json()["detail"]
    time.sleep(SECONDS + 0.1)
    r = replicas.b.get("/reservations", headers={"Authorization": f"Bearer {made['token']}"})
    assert r.status_code == 401 and "was revoked" in r.json()["detail"]


def test_expiry_is_checked_at_every_use_of_a_kept_token(replicas):
    made = replicas.issue(expires_at="2027-01-10T03:00:30Z")
    assert reads(replicas.a, made["token"]) == 200
    replicas.clock.now = NOW + timedelta(seconds=30)
    r = replicas.a.get("/reservations", headers={"Authorization": f"Bearer {made['token']}"})
    assert r.status_code == 401 and "expired" in r.json()["detail"]


def test_a_token_refused_is_never_kept(tmp_path):
    store = ReservationStore(f"sqlite:///{tmp_path / 'reservations.db'}")
    tokens = TokenStore(store)
    try:
        assert tokens.lookup("gos_unknown", NOW) == "the bearer token is not known"
        assert tokens.verified("gos_unknown", NOW) is None
        short = tokens.issue(TokenRequest(name="short", tenants=["ml"], expires_at=NOW), NOW, PLATFORM_ADMIN)
        assert "expired" in str(tokens.lookup(short.token, NOW)) and tokens.verified(short.token, NOW) is None
        revoked = tokens.issue(TokenRequest(name="revoked", tenants=["ml"]), NOW, PLATFORM_ADMIN)
        tokens.revoke(revoked.id, NOW, PLATFORM_ADMIN)
        assert "was revoked" in str(tokens.lookup(revoked.token, NOW))
        assert tokens.verified(revoked.token, NOW) is None
        valid = tokens.issue(TokenRequest(name="valid", tenants=["ml"]), NOW, PLATFORM_ADMIN)
        assert tokens.verified(valid.token, NOW) is None  # issuing keeps nothing: the first use reads
        assert tokens.lookup(valid.token, NOW) == valid.principal == tokens.verified(valid.token, NOW)
    finally:
        store.close()


def test_kept_for_the_seconds_given_then_read_again():
    clock = [100.0]
    kept = VerifiedTokens(seconds=1.0, monotonic=lambda: clock[0])
    kept.keep("d", kept.verified(ML, "tok_1", "ml-ci", NOW + timedelta(hours=1)), kept.generation)
    clock[0] += 0.9
    assert kept.get("d", NOW) == ML
    clock[0] += 0.2
    assert kept.get("d", NOW) is None
    kept.keep("d", kept.verified(ML, "tok_1", "ml-ci", NOW + timedelta(hours=1)), kept.generation)
    assert kept.get("d", NOW + timedelta(hours=1)) == "token tok_1 (ml-ci) expired"


def test_a_lookup_that_read_before_a_revocation_keeps_nothing():
    kept = VerifiedTokens()
    other = kept.verified(ML, "tok_2", "other", None)
    kept.keep("other", other, kept.generation)
    before = kept.generation  # a lookup starts reading tok_1 ...
    kept.forget("tok_1")  # ... tok_1's revocation commits meanwhile ...
    kept.keep("d", kept.verified(ML, "tok_1", "ml-ci", None), before)  # ... and the lookup ends
    assert kept.get("d", NOW) is None
    assert kept.get("other", NOW) == ML  # another token's entry stays
    kept.keep("d", kept.verified(ML, "tok_1", "ml-ci", None), kept.generation)
    kept.forget("tok_1")
    assert kept.get("d", NOW) is None


def test_the_kept_tokens_are_bounded():
    clock = [0.0]
    kept = VerifiedTokens(seconds=1.0, max_kept=3, monotonic=lambda: clock[0])

    def keep(n: int) -> None:
        kept.keep(f"d{n}", kept.verified(ML, f"tok_{n}", "x", None), kept.generation)

    for n in range(3):
        keep(n)
    clock[0] = 0.5
    keep(3)  # full of valid ones: cleared, then kept
    assert kept.get("d3", NOW) == ML and kept.get("d0", NOW) is None
    clock[0] = 1.0
    keep(4)
    keep(5)
    clock[0] = 1.6  # full again, d3 outlived its second: it alone makes room
    keep(6)
    assert [kept.get(f"d{n}", NOW) for n in (3, 4, 5, 6)] == [None, ML, ML, ML]
