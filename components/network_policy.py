"""NetworkPolicies: default deny, ingress and egress, in every namespace the platform installs
into, then each flow between its parts allowed by name.

The flows, from the platform's own pods:
- OPA's decision API (OPA_PORT) admits the ingress controller and the workload callers (the
  reconciler's workspace pods, networkPolicy.decisionClientNamespaces); its webhook port
  (WEBHOOK_PORT) admits only the API server, by address. OPA reaches the scheduler, the API server
  (kube-mgmt) and, with a bundle service, the registry outside.
- The scheduler admits OPA, the ingress controller, the workload callers and the cluster path's
  controller; it reaches its PostgreSQL (the chart's pods beside it, or networkPolicy.databaseCidrs),
  the forecasters in the models namespace, the API server when it reviews ServiceAccount tokens, and
  the outside only with --source electricitymaps.
- The cluster path's controller, beside the scheduler, admits nothing; it reaches the API server
  and the scheduler.
- MLflow, its PostgreSQL and SeaweedFS talk among themselves; the models' storage initializer reads
  SeaweedFS's S3 port; the forecasters admit the scheduler.
- The reconciler's workspace pods admit the Pulumi operator (its agent's port) and reach the API
  server, OPA, the scheduler and the outside (git, the state backend, package indexes).
- Every namespace resolves names through the cluster DNS.

The operators installed from charts (cert-manager, ASO, ACK, Krateo, KServe, the Pulumi operator)
get one profile: only the API server may call in (their webhooks), and they reach the API server
and the cloud APIs outside. Krateo's composition-dynamic-controller, which core-provider generates
in the composition namespace, gets it too, selected as that namespace's pods that are not the
platform's own (its pod labels are not stable across core-provider releases).

Why the API server is named by address (ipBlock): a managed control plane (EKS, GKE, AKS) runs
outside the pod network, so no namespace or pod selector matches its calls; see
NetworkPolicyConfig.api_server_cidrs. Not covered: Config Connector's namespaces, which its operator
creates at run time from upstream's manifest (a policy declared before them would fail).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components import aws_controllers, azure_operator, policy_engine, scheduler
from components.controller import LABELS as CONTROLLER
from components.controller import METRICS_PORT as CONTROLLER_METRICS_PORT
from components.controller import scheduler_principals
from components.platform_config import NetworkPolicyConfig, PlatformConfig

DNS_PORT = 53
KSERVE_HTTP_PORT = 8080  # MLServer's HTTP port in the ServingRuntime (components/mlops.py)
SEAWEEDFS_S3_PORT = 8333
POSTGRESQL = {"app.kubernetes.io/name": "postgresql"}  # the Bitnami chart's pods


@dataclass(frozen=True)
class Policy:
    namespace: str
    name: str
    spec: dict


def _ports(*ports: int, protocol: str = "TCP") -> list[dict]:
    return [{"protocol": protocol, "port": p} for p in ports]


def _selected(namespace_labels: dict, pods: dict | None = None) -> dict:
    """A peer: the pods with those labels (all when None) in the namespaces with those labels."""
    return {"namespaceSelector": {"matchLabels": namespace_labels}, "podSelector": _pods(pods or {})}


def _in(namespace: str, pods: dict | None = None) -> dict:
    """A peer: pods of the namespace of that name (its kubernetes.io/metadata.name label)."""
    return _selected({"kubernetes.io/metadata.name": namespace}, pods)


def _addresses(cidrs: list[str]) -> list[dict]:
    return [{"ipBlock": {"cidr": c}} for c in cidrs]


def _pods(labels: dict) -> dict:
    return {"matchLabels": labels} if labels else {}


def default_deny(namespace: str) -> Policy:
    # every pod, both directions, no rule: only what a later policy allows gets through
    return Policy(namespace, "default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})


def dns(namespace: str, n: NetworkPolicyConfig) -> Policy:
    to = [_selected(n.dns_namespace, n.dns_pods)]
    ports = _ports(DNS_PORT, protocol="UDP") + _ports(DNS_PORT)
    return Policy(
        namespace, "allow-dns", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": to, "ports": ports}]}
    )


def api_server(n: NetworkPolicyConfig) -> dict:
    """An egress rule to the API server's endpoints (the address behind kubernetes.default.svc)."""
    return {"to": _addresses(n.api_server_cidrs), "ports": _ports(*n.api_server_ports)}


def outside(n: NetworkPolicyConfig) -> dict:
    return {"to": _addresses(n.external_cidrs), "ports": _ports(*n.external_ports)}


def controller(namespace: str, n: NetworkPolicyConfig, pods: dict | None = None, extra_egress=()) -> Policy:
    """An operator's namespace: the API server calls its webhooks; it calls the API server and the
    cloud APIs."""
    return Policy(
        namespace,
        "allow-controller",
        {
            "podSelector": pods if pods is not None else {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": _addresses(n.api_server_cidrs)}],
            "egress": [api_server(n), outside(n), *extra_egress],
        },
    )


def platform_policies(c: PlatformConfig) -> list[Policy]:
    """Every policy the platform's configuration calls for, namespace by namespace."""
    n = c.network_policy
    ingress_controller = _selected(n.ingress_controller_namespace, n.ingress_controller_pods or None)
    callers = [_selected(labels) for labels in n.decision_client_namespaces]
    if c.reconciler.enabled:
        callers.append(_in(c.reconciler.stack_namespace))
    # Prometheus scrapes the scheduler and OPA on their API ports (greenops:platform.monitoring)
    scrapers = [_selected(c.monitoring.prometheus_namespace)] if c.monitoring.enabled else []
    policies: list[Policy] = []
    namespaces: list[str] = []

    def own(namespace: str) -> None:
        if namespace not in namespaces:
            namespaces.append(namespace)

    if c.policy.enabled:
        ns = c.policy.namespace
        own(ns)
        opa = policy_engine.LABELS
        egress = [api_server(n)]  # kube-mgmt lists and watches
        if c.scheduler.enabled:
            egress.append({"to": [_in(c.scheduler.namespace, scheduler.LABELS)], "ports": _ports(scheduler.PORT)})
        if c.policy.bundle_service_url:
            egress.append(outside(n))
        policies += [
            Policy(
                ns,
                "allow-opa",
                {
                    "podSelector": _pods(opa),
                    "policyTypes": ["Ingress", "Egress"],
                    "ingress": [
                        {"from": [ingress_controller, *callers, *scrapers], "ports": _ports(policy_engine.OPA_PORT)},
                        {"from": _addresses(n.api_server_cidrs), "ports": _ports(policy_engine.WEBHOOK_PORT)},
                    ],
                    "egress": egress,
                },
            )
        ]
    if c.scheduler.enabled:
        ns = c.scheduler.namespace
        own(ns)
        callers_of_scheduler = [ingress_controller, *callers, *scrapers]
        if c.policy.enabled:
            callers_of_scheduler.append(_in(c.policy.namespace, policy_engine.LABELS))
        if c.controller.enabled:
            callers_of_scheduler.append({"podSelector": _pods(CONTROLLER)})
        egress = [{"to": [{"podSelector": _pods(POSTGRESQL)}], "ports": _ports(n.database_port)}]
        if n.database_cidrs:
            egress.append({"to": _addresses(n.database_cidrs), "ports": _ports(n.database_port)})
        if c.kserve.enabled:
            egress.append({"to": [_in(c.kserve.models_namespace)], "ports": _ports(KSERVE_HTTP_PORT)})
        if c.scheduler.source.startswith("electricitymaps"):
            egress.append(outside(n))
        if scheduler.service_accounts(c.scheduler, scheduler_principals(c)):
            egress.append(api_server(n))  # TokenReview of ServiceAccount principals' tokens
        policies += [
            Policy(
                ns,
                "allow-scheduler",
                {
                    "podSelector": _pods(scheduler.LABELS),
                    "policyTypes": ["Ingress", "Egress"],
                    "ingress": [{"from": callers_of_scheduler, "ports": _ports(scheduler.PORT)}],
                    "egress": egress,
                },
            ),
            Policy(
                ns,
                "allow-scheduler-postgresql",
                {
                    "podSelector": _pods(POSTGRESQL),
                    "policyTypes": ["Ingress"],
                    "ingress": [{"from": [{"podSelector": _pods(scheduler.LABELS)}], "ports": _ports(n.database_port)}],
                },
            ),
        ]
        if c.controller.enabled:
            policies.append(
                Policy(
                    ns,
                    "allow-cluster-path-controller",
                    {
                        "podSelector": _pods(CONTROLLER),
                        # nothing calls it but Prometheus (its metrics); it lists, watches and holds its
                        # Lease, and reports to the scheduler
                        "policyTypes": ["Ingress", "Egress"],
                        **(
                            {"ingress": [{"from": scrapers, "ports": _ports(CONTROLLER_METRICS_PORT)}]}
                            if scrapers
                            else {}
                        ),
                        "egress": [
                            api_server(n),
                            {"to": [{"podSelector": _pods(scheduler.LABELS)}], "ports": _ports(scheduler.PORT)},
                        ],
                    },
                )
            )
    if c.mlflow.enabled:
        ns = c.mlflow.namespace
        own(ns)
        same = [{"podSelector": {}}]
        ingress = [{"from": same}]
        if c.kserve.enabled and c.mlflow.artifact_endpoint is None:
            # the models' storage initializer downloads them from SeaweedFS's S3 gateway
            ingress.append({"from": [_in(c.kserve.models_namespace)], "ports": _ports(SEAWEEDFS_S3_PORT)})
        egress = [{"to": same}]
        if c.mlflow.artifact_endpoint is not None:
            egress.append(outside(n))
        policies.append(
            Policy(
                ns,
                "allow-mlops",
                {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": ingress, "egress": egress},
            )
        )
    if c.kserve.enabled:
        ns = c.kserve.models_namespace
        own(ns)
        ingress = []
        if c.scheduler.enabled:
            ingress.append({"from": [_in(c.scheduler.namespace, scheduler.LABELS)], "ports": _ports(KSERVE_HTTP_PORT)})
        if c.mlflow.enabled and c.mlflow.artifact_endpoint is None:
            models = {"to": [_in(c.mlflow.namespace)], "ports": _ports(SEAWEEDFS_S3_PORT)}
        else:
            models = outside(n)
        policies.append(
            Policy(
                ns,
                "allow-forecasters",
                {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": ingress, "egress": [models]},
            )
        )
    if c.reconciler.enabled:
        r = c.reconciler
        own(r.stack_namespace)
        egress = [api_server(n), outside(n)]
        if c.policy.enabled:
            egress.append(
                {"to": [_in(c.policy.namespace, policy_engine.LABELS)], "ports": _ports(policy_engine.OPA_PORT)}
            )
        if c.scheduler.enabled:
            egress.append({"to": [_in(c.scheduler.namespace, scheduler.LABELS)], "ports": _ports(scheduler.PORT)})
        policies.append(
            Policy(
                r.stack_namespace,
                "allow-workspace",
                {
                    "podSelector": {},
                    "policyTypes": ["Ingress", "Egress"],
                    # the operator drives the workspace's agent
                    "ingress": [{"from": [_in(r.namespace)]}],
                    "egress": egress,
                },
            )
        )
        own(r.namespace)
        policies.append(controller(r.namespace, n, extra_egress=[{"to": [_in(r.stack_namespace)]}]))

    operators = [
        (c.krateo.enabled, c.krateo.namespace),
        (c.cert_manager.enabled, c.cert_manager.namespace),
        (c.azure.enabled, azure_operator.NAMESPACE),
        (c.aws.enabled, aws_controllers.NAMESPACE),
        (c.kserve.enabled, c.kserve.namespace),
    ]
    for enabled, ns in operators:
        if enabled and ns not in namespaces:
            own(ns)
            policies.append(controller(ns, n))
    if c.krateo.enabled:
        ns = c.krateo.composition_namespace
        if ns in namespaces:
            # shared with the platform's own pods: the composition controllers are the others
            others = {
                "matchExpressions": [
                    {"key": "app.kubernetes.io/part-of", "operator": "NotIn", "values": ["greenops"]},
                    {
                        "key": "app.kubernetes.io/name",
                        "operator": "NotIn",
                        "values": [POSTGRESQL["app.kubernetes.io/name"]],
                    },
                ]
            }
            policies.append(controller(ns, n, pods=others))
        else:
            own(ns)
            policies.append(controller(ns, n))
    return [p for ns in namespaces for p in (default_deny(ns), dns(ns, n))] + policies


@dataclass
class NetworkPoliciesArgs:
    config: PlatformConfig
    # the parts whose namespaces the policies go into (Namespaces and Helm releases creating them)
    after: list[pulumi.Resource] = field(default_factory=list)


class NetworkPolicies(pulumi.ComponentResource):
    def __init__(self, name: str, args: NetworkPoliciesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:NetworkPolicies", name, None, opts)
        after = pulumi.ResourceOptions(parent=self, depends_on=args.after)
        policies = platform_policies(args.config)
        self.policies = [
            k8s.networking.v1.NetworkPolicy(
                f"{name}-{p.namespace}-{p.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"greenops-{p.name}", namespace=p.namespace),
                spec=p.spec,
                opts=after,
            )
            for p in policies
        ]
        self.register_outputs({"namespaces": sorted({p.namespace for p in policies})})
