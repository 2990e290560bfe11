"""Kubernetes identities: ServiceAccount tokens checked by the real kube-apiserver's TokenReview.

A principals file names one ServiceAccount (write, tenant team-a, Pulumi path); the scheduler
reviews tokens with the API server under an identity bound to system:auth-delegator. The platform's
own principals file (the cluster path's controller, role report) is reviewed the same way."""

from __future__ import annotations

import httpx
import pytest
import yaml

from greenops.identity.kubernetes import AUDIENCE
from greenops.local.controlplane import LocalControlPlane
from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW, booking
from tests.support.common import require_tool

pytestmark = [pytest.mark.integration, pytest.mark.tools]

NAMESPACE = "ci"


def token_for(k: httpx.Client, account: str, audience: str) -> str:
    r = k.post(
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{account}/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": [audience]}},
    )
    assert r.status_code == 201, r.text
    token: str = r.json()["status"]["token"]
    return token


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    for tool in ("etcd", "kube-apiserver"):
        require_tool(tool)
    with LocalControlPlane() as cp:
        with cp.client() as k:
            k.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}})
            for account in ("runner", "stranger"):
                r = k.post(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", json={"metadata": {"name": account}})
                assert r.status_code == 201, r.text
        principals = tmp_path_factory.mktemp("principals") / "principals.yaml"
        principals.write_text(
            yaml.safe_dump(
                {"principals": [{"serviceAccount": f"{NAMESPACE}/runner", "tenants": ["team-a"], "paths": ["pulumi"]}]}
            )
        )
        with SchedulerServer(principals=principals, kubeconfig=cp.kubeconfig_path, env={"GREENOPS_NOW": NOW}) as s:
            yield cp, s


def call(s: SchedulerServer, token: str, path: str, **kw) -> httpx.Response:
    return httpx.put(f"{s.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=15, **kw)


def test_a_listed_service_account_is_its_principal(cluster):
    cp, s = cluster
    with cp.client() as k:
        token = token_for(k, "runner", AUDIENCE)
    ok = call(s, token, "/reservations/team-a/sa", json=booking())
    assert ok.status_code == 200, ok.text
    other = call(s, token, "/reservations/team-b/sa", json=booking(tenant="team-b"))
    assert other.status_code == 403 and "serviceaccount:ci/runner" in other.json()["detail"]


def test_a_token_for_another_audience_is_refused(cluster):
    cp, s = cluster
    with cp.client() as k:
        token = token_for(k, "runner", "https://kubernetes.default.svc")
    r = call(s, token, "/reservations/team-a/aud", json=booking())
    assert r.status_code == 401 and "not accepted by the API server" in r.json()["detail"]


def test_a_service_account_not_listed_is_refused(cluster):
    cp, s = cluster
    with cp.client() as k:
        token = token_for(k, "stranger", AUDIENCE)
    r = call(s, token, "/reservations/team-a/stranger", json=booking())
    assert (
        r.status_code == 401
        and "ServiceAccount ci/stranger is not one of the scheduler's principals" in r.json()["detail"]
    )


def test_a_forged_jwt_is_refused(cluster):
    _, s = cluster
    forged = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Y2k6cnVubmVyIn0.c2ln"
    r = call(s, forged, "/reservations/team-a/forged", json=booking())
    assert r.status_code == 401


def test_the_platforms_controller_is_a_reporter_for_every_tenant(cluster, tmp_path):
    """The principals file as the scheduler component writes it for the prod platform (OPA left out):
    the controller's token, from the API server with the scheduler's audience, reads every tenant's
    reservations and books none."""
    from components.controller import SERVICE_ACCOUNT, principal
    from components.platform_config import SchedulerConfig
    from components.scheduler import principals_document

    cp, _ = cluster
    with cp.client() as k:
        k.post("/api/v1/namespaces", json={"metadata": {"name": "greenops"}})
        r = k.post("/api/v1/namespaces/greenops/serviceaccounts", json={"metadata": {"name": SERVICE_ACCOUNT}})
        assert r.status_code == 201, r.text
        r = k.post(
            f"/api/v1/namespaces/greenops/serviceaccounts/{SERVICE_ACCOUNT}/token",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": [AUDIENCE]}},
        )
        assert r.status_code == 201, r.text
        token = r.json()["status"]["token"]
    principals = tmp_path / "principals.yaml"
    principals.write_text(principals_document(SchedulerConfig(), None, [principal("greenops")]))
    with SchedulerServer(principals=principals, kubeconfig=cp.kubeconfig_path, env={"GREENOPS_NOW": NOW}) as s:
        headers = {"Authorization": f"Bearer {token}"}
        listed = httpx.get(f"{s.url}/reservations", headers=headers, timeout=15)
        assert listed.status_code == 200, listed.text
        booked = call(s, token, "/reservations/team-a/by-controller", json=booking(path="cluster"))
        assert booked.status_code == 403, booked.text
        detail = booked.json()["detail"]
        assert "serviceaccount:greenops/greenops-controller (report; every tenant; path(s) cluster)" in detail
        assert "it needs the write role" in detail
