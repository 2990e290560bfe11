"""greenops:platform.monitoring under Pulumi mocks: one switch brings a ServiceMonitor for the
scheduler, PodMonitors for OPA and the controller, every target labelled with its part, the
alerts as a PrometheusRule, the Grafana dashboard in the sidecar convention, Prometheus declared
to the scheduler as a reader by its token's digest, and the NetworkPolicies admitting its scrapes.
Off, none of it exists; on without greenops:metricsToken, preview refuses by name."""

from __future__ import annotations

import hashlib
import json

import pulumi
import pytest
import yaml

from greenops.observability import alerts, dashboard
from tests.components.test_platform_mocks import METRICS_TOKEN, PROD, collect, of, run_platform, unwrap

CR = "kubernetes:monitoring.coreos.com/v1:"
ON = {**PROD, "monitoring": {"enabled": True, "prometheusLabels": {"release": "kps"}}}


@pytest.fixture
def on():
    return collect(ON)


def crs(m, kind: str) -> list:
    return of(m, CR + kind)


def test_one_switch_brings_every_monitor_the_rule_and_the_dashboard(on):
    [service] = crs(on, "ServiceMonitor")
    pods = {r.inputs["metadata"]["name"]: r for r in crs(on, "PodMonitor")}
    assert set(pods) == {"greenops-opa", "greenops-controller"}
    for monitor, part in (
        (service, "scheduler"),
        (pods["greenops-opa"], "opa"),
        (pods["greenops-controller"], "controller"),
    ):
        assert monitor.inputs["metadata"]["labels"]["release"] == "kps"  # what the Prometheus selects by
        [endpoint] = monitor.inputs["spec"].get("endpoints") or monitor.inputs["spec"]["podMetricsEndpoints"]
        assert endpoint["relabelings"] == [
            {"targetLabel": alerts.COMPONENT_LABEL, "replacement": part, "action": "replace"}
        ]
    # the scheduler's and OPA's metrics name tenants: Prometheus presents a token to each
    [endpoint] = service.inputs["spec"]["endpoints"]
    assert endpoint["authorization"]["credentials"] == {"name": "greenops-metrics-token", "key": "token"}
    [endpoint] = pods["greenops-opa"].inputs["spec"]["podMetricsEndpoints"]
    assert endpoint["authorization"]["credentials"] == {
        "name": "greenops-opa-metrics-token",
        "key": "GREENOPS_OPA_METRICS_TOKEN",
    }
    [rule] = crs(on, "PrometheusRule")
    assert [r["alert"] for g in rule.inputs["spec"]["groups"] for r in g["rules"]] == alerts.alert_names()
    [board] = [r for r in of(on, "kubernetes:core/v1:ConfigMap") if r.name == "monitoring-dashboard"]
    assert board.inputs["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(board.inputs["data"][f"{dashboard.UID}.json"])["uid"] == dashboard.UID


def test_prometheus_is_a_reader_of_the_scheduler_by_its_tokens_digest(on):
    [principals] = [r for r in of(on, "kubernetes:core/v1:ConfigMap") if r.name == "scheduler-principals"]
    entries = yaml.safe_load(unwrap(principals.inputs["data"])["principals.yaml"])["principals"]
    [prometheus] = [e for e in entries if e.get("name") == "prometheus"]
    token = METRICS_TOKEN["greenops:metricsToken"]
    assert prometheus == {
        "name": "prometheus",
        "tokenSha256": hashlib.sha256(token.encode()).hexdigest(),
        "role": "read",
        "paths": ["api"],
    }
    secrets = [
        r for r in of(on, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "greenops-metrics-token"
    ]
    assert [s.inputs["metadata"]["namespace"] for s in secrets] == ["greenops"]  # beside the scheduler
    assert all(unwrap(s.inputs["stringData"])["token"] == token for s in secrets)


def test_the_network_policies_admit_prometheus_to_the_scheduler_and_opa(on):
    policies = {
        r.inputs["metadata"]["name"]: r.inputs["spec"] for r in of(on, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
    }
    scraper = {"podSelector": {}, "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    for name in ("greenops-allow-scheduler", "greenops-allow-opa"):
        sources = [s for rule in policies[name]["ingress"] for s in rule.get("from", [])]
        assert scraper in sources, (name, sources)


def test_off_by_default_nothing_and_no_token_needed():
    m = collect(PROD)
    assert not [r for r in m.resources if r.typ.startswith(CR)]
    m = run_platform(PROD, without="greenops:metricsToken")

    @pulumi.runtime.test
    def go():
        from greenops.stack import program

        program.run()

    go()  # previews without the token when monitoring is off


def test_on_without_the_token_is_refused_by_name():
    run_platform(ON, without="greenops:metricsToken")

    @pulumi.runtime.test
    def go():
        from greenops.stack import program

        program.run()

    with pytest.raises(Exception, match="greenops:metricsToken"):
        go()


def test_the_controller_admits_only_prometheus_on_its_metrics_port(on):
    [policy] = [
        r.inputs["spec"]
        for r in of(on, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if r.inputs["metadata"]["name"] == "greenops-allow-cluster-path-controller"
    ]
    assert policy["ingress"] == [
        {
            "from": [
                {"podSelector": {}, "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
            ],
            "ports": [{"protocol": "TCP", "port": 8080}],
        }
    ]
