"""Monitoring: what the Prometheus Operator and Grafana need to watch the platform, behind one switch
(``greenops:platform.monitoring``): a ServiceMonitor for the scheduler, PodMonitors for OPA and the
cluster path's controller, the recommended alerts as a PrometheusRule, and the dashboard as a
ConfigMap in Grafana's sidecar convention.

Every target is relabelled with ``greenops_component`` (scheduler, opa, controller), which the
alerts and the dashboard read, so neither depends on how a given Prometheus names its jobs. The
scheduler's and OPA's metrics need a credential (they name tenants): at the scheduler Prometheus
presents ``greenops:metricsToken`` from a Secret beside it, which the scheduler declares as a reader
by its digest; at OPA, OPA's own scraper token (components/policy_engine.py), good for nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.controller import LABELS as CONTROLLER_LABELS
from components.platform_config import MonitoringConfig
from components.policy_engine import LABELS as OPA_LABELS
from components.policy_engine import METRICS_TOKEN_SECRET as OPA_METRICS_SECRET
from components.scheduler import LABELS as SCHEDULER_LABELS
from components.secret_env import secret_holding
from greenops.observability import alerts, dashboard
from greenops.policies import METRICS_TOKEN_VARIABLE

API = "monitoring.coreos.com/v1"
TOKEN_SECRET = "greenops-metrics-token"
TOKEN_KEY = "token"
METRICS_PORT = "metrics"  # the controller's container port name for /metrics (components/controller.py)


@dataclass
class MonitoringArgs:
    config: MonitoringConfig
    scheduler_namespace: str
    opa_namespace: str | None  # None: the policy engine is off
    controller: bool  # the cluster path's controller is installed
    metrics_token: pulumi.Input[str]
    opa_ca_pem: pulumi.Input[str] | None = None
    interval_seconds: float = 300  # greenops:reconcile.intervalSeconds: one interval late is overdue


class Monitoring(pulumi.ComponentResource):
    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:Monitoring", name, None, opts)
        c = args.config
        child = pulumi.ResourceOptions(parent=self)
        labels = {"app.kubernetes.io/part-of": "greenops", **c.prometheus_labels}
        self._interval = c.scrape_interval
        self.monitors: list[k8s.apiextensions.CustomResource] = []

        self.tokens = [
            secret_holding(
                f"{name}-token-scheduler", TOKEN_SECRET, args.scheduler_namespace, TOKEN_KEY, args.metrics_token, child
            )
        ]
        self.monitors.append(
            self._monitor(
                f"{name}-scheduler",
                "ServiceMonitor",
                args.scheduler_namespace,
                labels,
                SCHEDULER_LABELS,
                {"port": "http", "path": "/metrics", **self._bearer(), **_component(alerts.SCHEDULER)},
                child,
            )
        )
        if args.opa_namespace is not None:
            tls: dict[str, object] = {"serverName": f"opa.{args.opa_namespace}.svc"}
            if args.opa_ca_pem is not None:
                self.opa_ca = k8s.core.v1.ConfigMap(
                    f"{name}-opa-ca",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name="greenops-opa-ca", namespace=args.opa_namespace),
                    data={"ca.crt": args.opa_ca_pem},
                    opts=child,
                )
                tls["ca"] = {"configMap": {"name": "greenops-opa-ca", "key": "ca.crt"}}
            self.monitors.append(
                self._monitor(
                    f"{name}-opa",
                    "PodMonitor",
                    args.opa_namespace,
                    labels,
                    OPA_LABELS,
                    {
                        "port": "https",
                        "path": "/metrics",
                        "scheme": "https",
                        "tlsConfig": tls,
                        # OPA's own scraper token (derived from its admin token, good for GET /metrics only)
                        **self._bearer(OPA_METRICS_SECRET, METRICS_TOKEN_VARIABLE),
                        **_component(alerts.OPA),
                    },
                    child,
                )
            )
        if args.controller:
            self.monitors.append(
                self._monitor(
                    f"{name}-controller",
                    "PodMonitor",
                    args.scheduler_namespace,
                    labels,
                    CONTROLLER_LABELS,
                    {"port": METRICS_PORT, "path": "/metrics", **_component(alerts.CONTROLLER)},
                    child,
                )
            )
        thresholds = alerts.Thresholds(interval_seconds=args.interval_seconds, capacity_ratio=c.capacity_ratio)
        self.rule = k8s.apiextensions.CustomResource(
            f"{name}-alerts",
            api_version=API,
            kind="PrometheusRule",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="greenops-alerts", namespace=args.scheduler_namespace, labels=labels
            ),
            spec={"groups": alerts.rule_groups(thresholds)},
            opts=child,
        )
        self.dashboard = k8s.core.v1.ConfigMap(
            f"{name}-dashboard",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="greenops-grafana-dashboard",
                namespace=c.dashboard_namespace or args.scheduler_namespace,
                labels={"app.kubernetes.io/part-of": "greenops", **c.grafana_labels},
            ),
            data={f"{dashboard.UID}.json": dashboard.dashboard_json()},
            opts=child,
        )
        self.register_outputs({"rule": self.rule.metadata["name"], "dashboard": self.dashboard.metadata["name"]})

    @staticmethod
    def _bearer(secret: str = TOKEN_SECRET, key: str = TOKEN_KEY) -> dict[str, object]:
        return {"authorization": {"type": "Bearer", "credentials": {"name": secret, "key": key}}}

    def _monitor(
        self,
        name: str,
        kind: str,
        namespace: str,
        labels: dict[str, str],
        selector: dict[str, str],
        endpoint: dict[str, object],
        opts: pulumi.ResourceOptions,
    ) -> k8s.apiextensions.CustomResource:
        endpoints = "endpoints" if kind == "ServiceMonitor" else "podMetricsEndpoints"
        return k8s.apiextensions.CustomResource(
            name,
            api_version=API,
            kind=kind,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"greenops-{name.rsplit('-', 1)[-1]}", namespace=namespace, labels=labels
            ),
            spec={"selector": {"matchLabels": selector}, endpoints: [{**endpoint, "interval": self._interval}]},
            opts=opts,
        )


def _component(value: str) -> dict[str, object]:
    """The relabeling that names the part on every series of the target."""
    return {"relabelings": [{"targetLabel": alerts.COMPONENT_LABEL, "replacement": value, "action": "replace"}]}
