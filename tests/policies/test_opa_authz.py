"""OPA run with --authentication=token --authorization=basic and the bundle's system.authz, on loopback."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from greenops.local.opa import OpaServer
from greenops.local.webhook import namespace_manifest, put_namespaces
from greenops.policies.client import OpaClient, PolicyUnauthorized
from tests.policies.test_opa_integration import WORKLOAD as ETL
from tests.policies.test_opa_integration import vmtemplate
from tests.support.admission import admission_review

pytestmark = [pytest.mark.tools, pytest.mark.integration]

QUERY, ADMIN, WEBHOOK = "query-t0ken-for-greenvm", "admin-t0ken-for-kube-mgmt", "webh00k-t0ken-of-the-apiserver"
DECISION = "/v1/data/greenops/placement/decision"
WORKLOAD = dict(ETL, eligibleProviders=["azure"], maxLatency=100)  # the integration tests' workload, Azure only
POLICY = "package scratch\n\nx := 1\n"


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def opa(opa_binary, scheduler):
    with OpaServer(scheduler_url=scheduler.url, query_token=QUERY, admin_token=ADMIN) as server:
        # kube-mgmt's write of the replicated namespaces, with its admin token
        put_namespaces(server.url, {"greenops": namespace_manifest("greenops", "t1")}, token=ADMIN)
        yield server


@pytest.fixture
def http(opa):
    with httpx.Client(base_url=opa.url, timeout=10) as c:
        yield c


def test_the_data_api_answers_401_without_a_token_or_with_a_wrong_one(http):
    for headers in ({}, bearer("wrong"), bearer(QUERY + "x"), {"Authorization": "Basic dXNlcjpwYXNz"}):
        r = http.post(DECISION, json={"input": {"workload": WORKLOAD}}, headers=headers)
        assert r.status_code == 401, (headers, r.text)
        assert r.json()["code"] == "unauthorized"
        assert "result" not in r.json()
    assert "needs a bearer token" in http.post(DECISION, json={}).json()["message"]
    assert "bearer token was refused" in http.post(DECISION, json={}, headers=bearer("wrong")).json()["message"]
    assert http.get("/v1/data").status_code == 401
    assert http.get("/v1/policies").status_code == 401


def test_the_query_token_asks_for_decisions_but_writes_nothing(http):
    r = http.post(DECISION, json={"input": {"workload": WORKLOAD}}, headers=bearer(QUERY))
    assert r.status_code == 200, r.text
    assert r.json()["result"]["allowed"] is True
    # every tenant's reservations, read with OPA's own credential: not for a query token's holder
    assert http.post("/v1/data/greenops/visibility/placed_in_eu", json={}, headers=bearer(QUERY)).status_code == 401
    writes = [
        http.put("/v1/policies/x", content=POLICY, headers=bearer(QUERY)),
        http.put("/v1/data/x", json={"a": 1}, headers=bearer(QUERY)),
        http.delete("/v1/policies/system.rego", headers=bearer(QUERY)),
        http.patch("/v1/data/kubernetes", json=[{"op": "add", "path": "/x", "value": 1}], headers=bearer(QUERY)),
    ]
    for w in writes:
        assert w.status_code in (401, 403), (w.request.method, w.request.url, w.text)
        assert "admin token" in w.json()["message"]
    # nor reads of what is not a decision: the scheduler package holds the scheduler's token
    assert http.get("/v1/data/greenops/scheduler", headers=bearer(QUERY)).status_code == 401
    assert http.get("/v1/data/system/authz", headers=bearer(QUERY)).status_code == 401
    assert http.get("/v1/data/x", headers=bearer(ADMIN)).status_code == 200
    assert "result" not in http.get("/v1/data/x", headers=bearer(ADMIN)).json()  # nothing was written


def test_the_admin_token_writes_policies_and_data(http):
    vm = {"ns": {"vm-1": {"spec": {"tenant": "data", "cpu": 2}}}}
    assert http.put("/v1/data/kubernetes/vmtemplates", json=vm, headers=bearer(ADMIN)).status_code == 204
    assert http.get("/v1/data/kubernetes/vmtemplates", headers=bearer(ADMIN)).json()["result"] == vm
    assert http.put("/v1/policies/x", content=POLICY, headers=bearer(ADMIN)).status_code == 200
    assert http.get("/v1/data/scratch/x", headers=bearer(ADMIN)).json()["result"] == 1
    assert http.delete("/v1/policies/x", headers=bearer(ADMIN)).status_code == 200
    assert http.delete("/v1/data/kubernetes/vmtemplates", headers=bearer(ADMIN)).status_code == 204
    # the bundle's roots stay the bundle's, even for the admin: system.authz cannot be replaced
    takeover = "package system.authz\n\nallow := true\n"
    r = http.put("/v1/policies/takeover", content=takeover, headers=bearer(ADMIN))
    assert r.status_code >= 400, r.text
    assert http.post(DECISION, json={}).status_code == 401  # still closed


@pytest.fixture(scope="module")
def webhook(opa_binary, scheduler):
    """The webhook's own OPA process, as the platform runs it beside the decisions' one."""
    server = OpaServer(
        scheduler_url=scheduler.url, serves="webhook", webhook_token=WEBHOOK, query_token=QUERY, admin_token=ADMIN
    )
    with server:
        put_namespaces(server.url, {"greenops": namespace_manifest("greenops", "t1")}, token=ADMIN)
        yield server


def test_the_webhook_call_needs_the_api_servers_token_and_the_probes_none(webhook):
    deployment = {"metadata": {"name": "d"}}
    review = admission_review(
        "u-1", "CREATE", group="apps", kind="Deployment", namespace="greenops", name="d", object=deployment
    )
    with httpx.Client(base_url=webhook.url, timeout=10) as http:
        for headers in ({}, bearer("wrong"), bearer(QUERY)):
            refused = http.post("/", json=review, headers=headers)
            assert refused.status_code == 401 and "result" not in refused.json(), (headers, refused.text)
        r = http.post("/", json=review, headers=bearer(WEBHOOK))
        assert r.status_code == 200, r.text
        assert r.json()["response"] == {"uid": "u-1", "allowed": True}  # not a VmTemplate: passes untouched
        vm = vmtemplate()
        review["request"].update(
            kind={"group": "composition.krateo.io", "version": "v1-2-0", "kind": "VmTemplate"}, name="vm-1", object=vm
        )
        answer = http.post("/", json=review, headers=bearer(WEBHOOK)).json()["response"]
        assert answer["allowed"] is True, answer
        ops = json.loads(base64.b64decode(answer["patch"]))
        assert {op["path"] for op in ops} >= {"/spec/provider", "/spec/schedulingLocation", "/spec/schedulingTime"}
        for path in ("/health", "/health?bundles", "/health?plugins"):
            assert http.get(path).status_code == 200, path
        # the webhook's listener serves nothing else: no decision query, even with the query token
        assert http.post(DECISION, json={"input": {"workload": WORKLOAD}}, headers=bearer(QUERY)).status_code == 401
        assert http.post(DECISION, json={"input": {"workload": WORKLOAD}}, headers=bearer(WEBHOOK)).status_code == 401


def test_the_decisions_opa_serves_no_review_whoever_sends_it(http):
    review = admission_review("u-2", "CREATE", namespace="greenops", name="vm-1", object=vmtemplate())
    for headers in ({}, bearer(QUERY), bearer(ADMIN), bearer(WEBHOOK)):
        r = http.post("/", json=review, headers=headers)
        assert r.status_code == 401 and "served only by the webhook's own OPA listener" in r.text, headers
    for path in ("/health", "/health?bundles", "/health?plugins"):
        assert http.get(path).status_code == 200, path
    assert http.get("/").status_code == 401  # OPA's query page is not open


def test_opa_client_names_a_refused_or_missing_token(opa):
    with OpaClient(opa.url, token=QUERY) as c:
        assert c.decision(WORKLOAD)["allowed"] is True
    with OpaClient(opa.url, token="wrong", backoff=0.01) as c, pytest.raises(PolicyUnauthorized) as info:
        c.decision(WORKLOAD)
    message = str(info.value)
    assert message.startswith(f"OPA at {opa.url} refused the bearer token (HTTP 401: ")
    assert "greenops:opaToken" in message and "wrong" not in message and "Traceback" not in message
    with (
        OpaClient(opa.url, backoff=0.01) as c,
        pytest.raises(PolicyUnauthorized, match="requires a bearer token and none was sent"),
    ):
        c.decision(WORKLOAD)


def test_a_local_opa_without_tokens_given_is_never_open(opa_binary, scheduler):
    """The old default (no tokens: an open API for loopback tools) is gone: OpaServer makes its own
    random tokens and OPA refuses every query without one."""
    with OpaServer(scheduler_url=scheduler.url) as server:
        assert server.query_token and server.admin_token and server.query_token != server.admin_token
        assert len(server.query_token) >= 32 and len(server.admin_token) >= 32
        r = httpx.post(f"{server.url}{DECISION}", json={"input": {"workload": WORKLOAD}}, timeout=10)
        assert r.status_code == 401 and "needs a bearer token" in r.json()["message"]
        assert httpx.get(f"{server.url}/v1/data", timeout=10).status_code == 401
        with OpaClient(server.url, backoff=0.01) as c, pytest.raises(PolicyUnauthorized):
            c.decision(WORKLOAD)
        with OpaClient(server.url, token=server.query_token) as c:
            assert c.decision(WORKLOAD)["allowed"] is True
        ok = httpx.post(
            f"{server.url}{DECISION}", json={"input": {"workload": WORKLOAD}}, headers=server.query_headers, timeout=10
        )
        assert ok.status_code == 200 and ok.json()["result"]["allowed"] is True
        assert httpx.get(f"{server.url}/v1/data/x", headers=server.admin_headers, timeout=10).status_code == 200
    with OpaServer(scheduler_url=scheduler.url) as other:  # fresh tokens each time, never a shared default
        assert {other.query_token, other.admin_token}.isdisjoint({server.query_token, server.admin_token})


def test_the_schedulers_token_is_not_readable_through_the_data_api(opa_binary, scheduler):
    with OpaServer(scheduler_url=scheduler.url, scheduler_token="sched-t0ken") as server:
        for path in ("/v1/data/greenops/scheduler", "/v1/data/greenops", "/v1/data"):
            # the query token may not read these at all
            assert httpx.get(f"{server.url}{path}", headers=server.query_headers, timeout=10).status_code == 401, path
            # and even kube-mgmt's admin token, which reads everything, does not see the token in them
            r = httpx.get(f"{server.url}{path}", headers=server.admin_headers, timeout=10)
            assert r.status_code == 200 and "sched-t0ken" not in r.text, path
