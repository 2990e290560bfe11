"""A hostile caller against the real OPA, with the real scheduler behind it: OPA's policy and data
APIs are never writable anonymously (nor with the query token), and a forged admission review,
which needs no credential, cannot release or rebook what is not the cluster path's."""

from __future__ import annotations

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
    with OpaServer(scheduler_url=tenancy.sched.url, scheduler_token=tenancy.opa) as server:
        put_namespaces(
            server.url,
            {ns: namespace_manifest(ns, ns) for ns in ("team-a", "team-b", "attacker")},
            token=server.admin_token,
        )
        yield server


@pytest.mark.parametrize("who", ["anonymous", "query token"])
def test_policy_and_data_writes_need_the_admin_token(opa: OpaServer, who: str):
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


def test_a_forged_delete_review_cannot_release_a_pulumi_path_booking(tenancy: Tenancy, opa: OpaServer):
    assert tenancy.call("PUT", "/reservations/team-a/prod-stack/db", tenancy.team_a, json=booking()).status_code == 200
    before = tenancy.row("team-a/prod-stack/db")
    answer = httpx.post(f"{opa.url}/", json=delete_review("attacker", "team-a/prod-stack/db"), timeout=20).json()
    assert answer["response"]["allowed"] is True  # a deletion is never blocked
    assert tenancy.row("team-a/prod-stack/db") == before
    assert before is not None and before["phase"] == "Scheduled"


def test_a_forged_delete_review_cannot_release_another_namespaces_booking(tenancy: Tenancy, opa: OpaServer):
    key = "team-b/vm/uid-42"
    made = tenancy.call("PUT", f"/reservations/{key}", tenancy.opa, json=booking(tenant="team-b", path="cluster"))
    assert made.status_code == 200, made.text
    before = tenancy.row(key)
    answer = httpx.post(f"{opa.url}/", json=delete_review("attacker", key), timeout=20).json()
    assert answer["response"]["allowed"] is True
    assert tenancy.row(key) == before
