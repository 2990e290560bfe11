"""A hostile caller against the real OPA, with the real scheduler behind it, as the platform runs
OPA: a decisions' process and the webhook's own. OPA's policy and data APIs are never writable
anonymously (nor with the query token); an admission review is served only by the webhook's
process and only to the API server's token; and even a review sent with that token cannot rebook a
reservation already made, nor release one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from greenops.local.opa import OpaServer
from greenops.local.webhook import namespace_manifest, put_namespaces
from tests.support.admission import admission_review
from tests.support.bookings import booking
from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.integration
EVIL = """package evil
import rego.v1
leak := opa.runtime().env.GREENOPS_SCHEDULER_TOKEN
"""


@pytest.fixture(scope="module")
def opa(tenancy: Tenancy) -> Iterator[OpaServer]:
    """The decisions' OPA: the Data API, reachable by workload pods."""
    with OpaServer(scheduler_url=tenancy.sched.url, scheduler_token=tenancy.opa) as server:
        yield server


@pytest.fixture(scope="module")
def webhook(tenancy: Tenancy) -> Iterator[OpaServer]:
    """The webhook's OPA: admission reviews, with the API server's token only."""
    with OpaServer(scheduler_url=tenancy.sched.url, scheduler_token=tenancy.opa, serves="webhook") as server:
        put_namespaces(
            server.url,
            {ns: namespace_manifest(ns, ns) for ns in ("team-a", "team-b", "attacker")},
            token=server.admin_token,
        )
        yield server


@pytest.mark.parametrize("who", ["anonymous", "query token"])
def test_policy_and_data_writes_need_the_admin_token(webhook: OpaServer, who: str):
    opa = webhook  # kube-mgmt writes the namespaces into the webhook's process
    headers = {} if who == "anonymous" else opa.query_headers
    put_policy = httpx.put(f"{opa.url}/v1/policies/evil", content=EVIL, headers=headers, timeout=10)
    assert put_policy.status_code == 401, put_policy.text
    assert httpx.get(f"{opa.url}/v1/policies", headers=headers, timeout=10).status_code == 401
    relabel = httpx.put(
        f"{opa.url}/v1/data/kubernetes/namespaces/team-a",
        json=namespace_manifest("team-a", "team-b"),
        headers=headers,
        timeout=10,
    )
    assert relabel.status_code == 401
    label = httpx.get(f"{opa.url}/v1/data/kubernetes/namespaces/team-a", headers=opa.admin_headers, timeout=10)
    assert label.json()["result"]["metadata"]["labels"]["greenops.io/tenant"] == "team-a"
    evil = httpx.get(f"{opa.url}/v1/data/evil/leak", headers=opa.admin_headers, timeout=10).json()
    assert "result" not in evil


def delete_review(namespace: str, key: str) -> dict:
    vm = {
        "apiVersion": "composition.krateo.io/v1",
        "kind": "VmTemplate",
        "metadata": {"name": "z", "namespace": namespace, "annotations": {"greenops.io/reservation": key}},
        "spec": {"vmName": "z"},
    }
    return admission_review("forged-1", "DELETE", namespace=namespace, name="z", oldObject=vm)


def create_review(namespace: str, uid: str, cpu: int) -> dict:
    vm = {
        "apiVersion": "composition.krateo.io/v1",
        "kind": "VmTemplate",
        "metadata": {"name": "vm", "namespace": namespace},
        "spec": {
            "vmName": "vm",
            "cpu": cpu,
            "memory": 4,
            "duration": "2h",
            "deadline": "2027-01-11T03:00:00Z",
            "maxLatency": 2000,
            "originRegion": "westeurope",
        },
    }
    return admission_review(uid, "CREATE", namespace=namespace, name="vm", object=vm)


def send(opa: OpaServer, review: dict, headers: dict | None = None) -> httpx.Response:
    return httpx.post(f"{opa.url}/", json=review, headers=headers or {}, timeout=20)


def test_a_review_on_the_decisions_listener_books_nothing(tenancy: Tenancy, opa: OpaServer):
    # the listener tenant pods may reach: no review is served there, whatever the credential
    uid = str(uuid.uuid4())
    for headers in ({}, opa.query_headers, opa.admin_headers):
        r = send(opa, create_review("attacker", uid, 2), headers)
        assert r.status_code == 401 and "served only by the webhook's own OPA listener" in r.text, r.text
    assert tenancy.row(f"attacker/vm/{uid}") is None


def test_an_anonymous_or_forged_review_on_the_webhook_listener_is_refused(
    tenancy: Tenancy, opa: OpaServer, webhook: OpaServer
):
    uid = str(uuid.uuid4())
    for headers in ({}, {"Authorization": "Bearer guess"}, opa.query_headers, webhook.query_headers):
        r = send(webhook, create_review("attacker", uid, 2), headers)
        assert r.status_code == 401, (headers, r.text)
    assert tenancy.row(f"attacker/vm/{uid}") is None


def test_a_create_reusing_a_victims_request_uid_cannot_rebook_it(tenancy: Tenancy, webhook: OpaServer):
    # Defence in depth: even a review that reaches the webhook with its token (a compromised API
    # server's path, a replay) cannot change a reservation already made under its key.
    uid = str(uuid.uuid4())
    placed = send(webhook, create_review("team-b", uid, 2), webhook.webhook_headers).json()["response"]
    assert placed["allowed"], placed
    key = f"team-b/vm/{uid}"
    before = tenancy.row(key)
    assert before is not None and before["milli_cpu"] == 2000
    again = send(webhook, create_review("team-b", uid, 2), webhook.webhook_headers).json()["response"]
    assert again["allowed"]  # the very same review, re-sent: the same answer
    forged = send(webhook, create_review("team-b", uid, 48), webhook.webhook_headers).json()["response"]
    assert forged["allowed"] is False
    assert f"reservation {key} exists" in forged["status"]["message"], forged
    assert tenancy.row(key) == before  # cpu 2, the same revision: nothing changed


def test_a_delete_review_releases_nothing(tenancy: Tenancy, webhook: OpaServer):
    # only the controller releases, on the deletion it observes on the API server
    key = "team-b/vm/6f1d2c3b-4a59-4e8d-9c7b-0a1b2c3d4e5f"
    made = tenancy.call("PUT", f"/reservations/{key}", tenancy.opa, json=booking(tenant="team-b", path="cluster"))
    assert made.status_code == 200, made.text
    assert tenancy.call("PUT", "/reservations/team-a/prod-stack/db", tenancy.team_a, json=booking()).status_code == 200
    before = {k: tenancy.row(k) for k in (key, "team-a/prod-stack/db")}
    for namespace, named in (("team-b", key), ("attacker", key), ("attacker", "team-a/prod-stack/db")):
        for headers in ({}, webhook.webhook_headers):
            r = send(webhook, delete_review(namespace, named), headers)
            assert r.status_code == (200 if headers else 401), r.text
            if headers:
                assert r.json()["response"]["allowed"] is True  # a deletion is never blocked
    assert {k: tenancy.row(k) for k in before} == before
    assert all(row is not None and row["phase"] == "Scheduled" for row in before.values())


def test_the_query_token_reads_no_tenants_reservations_through_opa(tenancy: Tenancy, opa: OpaServer):
    # OPA reads the record with its own every-tenant credential; the query token every Placement
    # presents names no tenant, so visibility is not a decision it may ask for
    key = "team-b/secret-project/db"
    assert tenancy.call("PUT", f"/reservations/{key}", tenancy.team_b, json=booking()).status_code == 200
    for rule in ("", "/placed", "/placed_in_eu", "/affected"):
        r = httpx.post(
            f"{opa.url}/v1/data/greenops/visibility{rule}",
            json={"input": {"region": "francecentral"}},
            headers=opa.query_headers,
            timeout=20,
        )
        assert r.status_code == 401 and key not in r.text, (rule, r.text)
    # team-a's own credential at the scheduler does not list it either
    mine = tenancy.call("GET", "/reservations", tenancy.team_a).json()["reservations"]
    assert key not in {row["key"] for row in mine}
    # the platform's (the admin token) still sees every tenant's
    seen = httpx.post(f"{opa.url}/v1/data/greenops/visibility/placed", json={}, headers=opa.admin_headers, timeout=20)
    assert key in {row["key"] for row in seen.json()["result"]}
