"""OPA's own Prometheus metrics and its decision logs, as the platform runs it: a real OPA on
loopback with --authentication=token --authorization=basic, the bundle's system.authz and
system.log, decision logs on its console (its log file here)."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from greenops.local.opa import OpaServer
from greenops.local.webhook import namespace_manifest, put_namespaces
from greenops.policies import metrics_token, webhook_token
from tests.policies.test_opa_authz import DECISION, WORKLOAD, bearer
from tests.policies.test_opa_integration import review, vmtemplate

pytestmark = [pytest.mark.tools, pytest.mark.integration]

QUERY, ADMIN = "query-t0ken-0bs", "admin-t0ken-0bs"
METRICS = metrics_token(ADMIN)  # as the platform derives it (components/policy_engine.py)
SCHEDULER = "scheduler-t0ken-0bs"  # OPA's own credential at the scheduler, in http.send's headers
WEBHOOK = webhook_token(ADMIN)  # the API server's on the webhook's OPA, as the platform derives it
PLANTED = ("planted-secret-1", "planted-secret-2", "planted-secret-3")  # credentials a caller put in an input


TOKENS = {"scheduler_token": SCHEDULER, "query_token": QUERY, "admin_token": ADMIN, "metrics_token": METRICS}


@pytest.fixture(scope="module")
def opa(opa_binary, scheduler):
    with OpaServer(scheduler_url=scheduler.url, **TOKENS) as server:
        yield server


@pytest.fixture(scope="module")
def webhook(opa_binary, scheduler):
    with OpaServer(scheduler_url=scheduler.url, serves="webhook", webhook_token=WEBHOOK, **TOKENS) as server:
        put_namespaces(server.url, {"greenops": namespace_manifest("greenops", "t1")}, token=ADMIN)
        yield server


def test_the_metrics_answer_the_scrapers_token_and_only_it(opa):
    with httpx.Client(timeout=10) as http:
        decision = http.post(f"{opa.url}{DECISION}", json={"input": {"workload": WORKLOAD}}, headers=bearer(QUERY))
        assert decision.status_code == 200, decision.text
        r = http.get(opa.metrics_url, headers=bearer(METRICS))
        assert r.status_code == 200, r.text
        families = {f.name: f for f in text_string_to_metric_families(r.text)}
        requests = families["http_request_duration_seconds"]
        handlers = {s.labels.get("handler") for s in requests.samples if s.name.endswith("_count") and s.value > 0}
        assert "v1/data" in handlers, handlers  # the decision just asked is counted
        assert "go_goroutines" in families
        assert http.get(opa.metrics_url, headers=bearer(ADMIN)).status_code == 200
        for headers in ({}, bearer(QUERY), bearer("guess"), bearer(METRICS + "x")):
            refused = http.get(opa.metrics_url, headers=headers)
            assert refused.status_code == 401, (headers, refused.text)
            assert "http_request_duration_seconds" not in refused.text
        # the scraper's token reads the metrics and nothing else
        for method, path in (("POST", DECISION), ("GET", "/v1/data"), ("GET", "/v1/config"), ("POST", "/metrics")):
            r = http.request(method, f"{opa.url}{path}", json={}, headers=bearer(METRICS))
            assert r.status_code == 401, (method, path, r.text)


def test_decisions_are_logged_with_every_credential_erased(opa, webhook):
    # the webhook's call, on its own OPA: admission asks the scheduler with OPA's own token (http.send)
    vm = vmtemplate()
    vm["metadata"]["annotations"] = {"example.com/api-key": PLANTED[2]}
    answer = httpx.post(f"{webhook.url}/", json=review(obj=vm), headers=bearer(WEBHOOK), timeout=10).json()
    assert answer["response"]["allowed"] is True, answer
    with httpx.Client(base_url=opa.url, timeout=10) as http:
        planted = {"workload": {**WORKLOAD, "token": PLANTED[0]}, "headers": {"Authorization": f"Bearer {PLANTED[1]}"}}
        assert http.post(DECISION, json={"input": planted}, headers=bearer(QUERY)).json()["result"]["allowed"]
        # an admin's ad-hoc query of OPA's environment: every token is in its result
        env = http.post("/v1/query", json={"query": "x := opa.runtime().env"}, headers=bearer(ADMIN))
        assert env.status_code == 200 and env.json()["result"][0]["x"]["GREENOPS_OPA_QUERY_TOKEN"] == QUERY

    events = _decision_log(opa, 2) + _decision_log(webhook, 1)
    text = opa.log.read_text() + webhook.log.read_text()
    for secret in (QUERY, ADMIN, METRICS, SCHEDULER, WEBHOOK, *PLANTED):
        assert secret not in text, f"a credential ({secret[:8]}...) is in OPA's log"
    placement = [e for e in events if e.get("path") == "greenops/placement/decision"][-1]  # this test's
    assert set(placement["erased"]) == {"/input/workload/token", "/input/headers/Authorization"}
    assert placement["input"]["workload"]["name"] == "etl" and placement["result"]["allowed"] is True
    [admission] = [e for e in events if e.get("path") == "system/main"]
    assert admission["input"]["request"]["object"]["spec"]["vmName"] == "vm-1"  # what was decided stays readable
    assert admission["result"]["response"]["allowed"] is True
    # an annotation key a pointer cannot name: the object holding it is erased instead
    assert admission["erased"] == ["/input/request/object/metadata/annotations"]
    [query] = [e for e in events if e.get("query")]
    assert query["erased"] == ["/result"] and "result" not in query


def _decision_log(opa: OpaServer, at_least: int, timeout: float = 10.0) -> list[dict]:
    """The decision events in OPA's log (one JSON object a line, among OPA's own lines)."""
    deadline = time.monotonic() + timeout
    while True:
        events = []
        for line in opa.log.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "Decision Log":
                events.append(entry)
        if len(events) >= at_least or time.monotonic() > deadline:
            assert len(events) >= at_least, events
            return events
        time.sleep(0.1)
