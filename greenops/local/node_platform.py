"""The platform on the loopback cluster's real node, as the node's suites and its demo install it:
PostgreSQL in a pod (Debian's server, from an image built here) behind a Service, and a stack that
installs the scheduler by `pulumi up` as the prod stack declares it, pointed at that server as at an
existing one (greenops:schedulerDatabaseUrl). The parts whose images cannot be had here are off
(docs/operations/install.md, "Installed on a real node here")."""

from __future__ import annotations

import json
import secrets
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from components.hardening import CONTAINER_SECURITY as HARDENED_CONTAINER
from components.hardening import NON_ROOT_ID, POD_SECURITY, RESTRICTED_NAMESPACE_LABELS
from components.platform_config import PolicyEngineConfig
from components.policy_engine import webhook_address
from greenops.common.endpoints import SCHEDULER_PORT, SCHEDULER_SERVICE, in_cluster_scheduler_url
from greenops.local.controlplane import ControlPlaneError, LocalControlPlane
from greenops.local.webhook import ServingPems, serving_pems
from greenops.policies import webhook_token
from greenops.policies.webhook import VMTEMPLATE_GROUP

DATA_NS, SCHEDULER_NS, POLICY_NS = "greenops-data", "greenops-scheduler", "greenops-policy"
DB_USER = DB_NAME = "greenops"
PG_LABELS = {"app.kubernetes.io/name": "postgresql"}
NONROOT = NON_ROOT_ID
# the platform's own container hardening, with the user set on the container (a test pod has no
# pod-level securityContext)
CONTAINER_SECURITY = {**HARDENED_CONTAINER, "runAsUser": NON_ROOT_ID, "runAsGroup": NON_ROOT_ID}


@dataclass(frozen=True)
class Database:
    in_cluster: str  # the scheduler pods' URL: the Service's DNS name
    from_host: str  # the host's: the pod's address on the bridge


def _token() -> str:
    return secrets.token_hex(32)


@dataclass(frozen=True)
class PolicyKeys:
    """OPA's three tokens (greenops:opaAdminToken, opaToken, opaSchedulerToken) and Prometheus's,
    made before the control plane starts: the API server reads the token it presents to the
    webhook's OPA (derived from the admin token) once, at its start, as a platform team's API
    server does."""

    admin: str = field(default_factory=_token)
    query: str = field(default_factory=_token)
    scheduler: str = field(default_factory=_token)
    metrics: str = field(default_factory=_token)  # Prometheus's at the scheduler (greenops:metricsToken)
    # OPA's serving certificate, from a CA of the suite's own: the pulumi-tls plugin, which would
    # make them in state, cannot be had here (policy.caBundle / servingCert, greenops:opaServingKey)
    serving: ServingPems = field(
        default_factory=lambda: serving_pems(
            tuple(f"opa.{POLICY_NS}.svc{suffix}" for suffix in ("", ".cluster.local")), ("127.0.0.1",)
        )
    )

    @property
    def webhook_tokens(self) -> dict[str, str]:
        """``LocalControlPlane(webhook_tokens=...)``: the webhook by its Service's name, as the
        component's output apiServerAdmissionKubeconfig gives it."""
        return {webhook_address(PolicyEngineConfig(namespace=POLICY_NS)): webhook_token(self.admin)}

    def secrets(self) -> dict[str, str]:
        return {
            "opaAdminToken": self.admin,
            "opaToken": self.query,
            "opaSchedulerToken": self.scheduler,
            "opaServingKey": self.serving.key_pem.decode(),
            "metricsToken": self.metrics,
        }


@dataclass(frozen=True)
class Installed:
    url: str  # the scheduler through its Service's ClusterIP (kube-proxy's rules, from the host)
    admin_token: str
    seconds: float  # how long `pulumi up` took


def create_restricted_namespace(
    k: httpx.Client, name: str, timeout: float = 60, labels: dict[str, str] | None = None
) -> None:
    """A namespace that enforces `restricted` (with ``labels`` besides), once its `default`
    ServiceAccount exists (until then ServiceAccount admission refuses every pod)."""
    metadata = {"name": name, "labels": {**(labels or {}), **RESTRICTED_NAMESPACE_LABELS}}
    r = k.post("/api/v1/namespaces", json={"metadata": metadata})
    if r.status_code != 201:
        raise ControlPlaneError(f"namespace {name}: {r.status_code} {r.text[:300]}")
    deadline = time.monotonic() + timeout
    while k.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").status_code != 200:
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"namespace {name}: no default ServiceAccount after {timeout:.0f}s")
        time.sleep(0.2)


def postgresql_pod(image: str) -> dict[str, Any]:
    """Debian's server as UID 65532: its cluster in an emptyDir, its password from a Secret file."""
    return {
        "metadata": {"name": "postgresql", "labels": PG_LABELS},
        "spec": {
            "automountServiceAccountToken": False,
            "securityContext": POD_SECURITY,
            "containers": [
                {
                    "name": "postgresql",
                    "image": image,
                    "env": [
                        {"name": "POSTGRES_USER", "value": DB_USER},
                        {"name": "POSTGRES_DB", "value": DB_NAME},
                        {"name": "POSTGRES_PASSWORD_FILE", "value": "/var/run/secrets/db/password"},
                        # a folder of the volume: initdb makes it 0700, which it cannot do to the mount
                        {"name": "PGDATA", "value": "/var/lib/postgresql/data/cluster"},
                    ],
                    "ports": [{"name": "postgresql", "containerPort": 5432}],
                    "readinessProbe": {"tcpSocket": {"port": 5432}, "periodSeconds": 1},
                    "securityContext": CONTAINER_SECURITY,
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/var/lib/postgresql/data"},
                        {"name": "tmp", "mountPath": "/tmp"},
                        {"name": "password", "mountPath": "/var/run/secrets/db", "readOnly": True},
                    ],
                }
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "tmp", "emptyDir": {}},
                {"name": "password", "secret": {"secretName": "postgresql", "defaultMode": 0o440}},
            ],
        },
    }


def start_postgresql(cp: LocalControlPlane, image: str, timeout: float = 180) -> Database:
    """The PostgreSQL pod and its Service in DATA_NS, once it accepts connections."""
    password = secrets.token_urlsafe(24)
    with cp.client() as k:
        create_restricted_namespace(k, DATA_NS)
        secret = {"metadata": {"name": "postgresql"}, "stringData": {"password": password}}
        for path, body in (
            ("secrets", secret),
            ("pods", postgresql_pod(image)),
            (
                "services",
                {"metadata": {"name": "postgresql"}, "spec": {"selector": PG_LABELS, "ports": [{"port": 5432}]}},
            ),
        ):
            r = k.post(f"/api/v1/namespaces/{DATA_NS}/{path}", json=body)
            if r.status_code != 201:
                raise ControlPlaneError(f"{DATA_NS}/{path}: {r.status_code} {r.text[:300]}")
        pod = wait_ready(k, DATA_NS, "postgresql", timeout)
    return Database(
        f"postgresql+psycopg://{DB_USER}:{password}@postgresql.{DATA_NS}.svc:5432/{DB_NAME}",
        f"postgresql+psycopg://{DB_USER}:{password}@{pod['status']['podIP']}:5432/{DB_NAME}",
    )


def wait_ready(k: httpx.Client, namespace: str, name: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    got: dict[str, Any] = {}
    while time.monotonic() < deadline:
        got = k.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
        conditions = (got.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return got
        time.sleep(0.5)
    raise ControlPlaneError(f"pod {namespace}/{name} not Ready after {timeout:.0f}s: {got.get('status')}")


def stack_config(
    images: dict[str, str],
    capacity_vcpu: float,
    principals: list[dict[str, Any]] | None = None,
    keys: PolicyKeys | None = None,
    monitoring: bool = False,
) -> dict[str, Any]:
    """greenops:* config of a stack installing the scheduler (two replicas) from ``images["greenops"]``
    and, with ``keys``, OPA (two pods, from ``images["opa"]`` with ``images["kube-mgmt-standin"]``
    as its sidecar) and the controller (two replicas, one leading): nothing upstream. The requests
    are smaller than the prod stack's, for a node of two CPUs; the Lease is short, so a takeover
    is seen in seconds. With ``monitoring`` (the Prometheus Operator's CRDs must be served) the
    monitors, the alerts and the dashboard too, labelled as the prod stack labels them."""
    platform: dict[str, Any] = {
        "krateo": {"enabled": False},
        "policy": {"enabled": False},
        "mlflow": {"enabled": False},
        "kserve": {"enabled": False},
        "certManager": {"enabled": False},
        "scheduler": {
            "namespace": SCHEDULER_NS,
            "image": images["greenops"],
            "replicas": 2,
            "capacityVcpu": capacity_vcpu,
            "cpu": "200m",
            "memory": "384Mi",
            "serviceAccountPrincipals": principals or [],
        },
    }
    if keys:
        platform["policy"] = {
            "namespace": POLICY_NS,
            "caBundle": keys.serving.ca_pem.decode(),
            "servingCert": keys.serving.cert_pem.decode(),
            "schedulerUrl": in_cluster_scheduler_url(SCHEDULER_NS),
            "cpu": "50m",
            "memory": "256Mi",
        }
        # no cloud operator runs here: a VM counts as running once its objects exist
        platform["controller"] = {"readiness": "applied", "leaseSeconds": 6, "cpu": "50m", "resyncSeconds": 5}
        platform["versions"] = {"opa_image": images["opa"], "kube_mgmt_image": images["kube-mgmt-standin"]}
    if monitoring:
        labels = {"release": "kube-prometheus-stack"}
        platform["monitoring"] = {"enabled": True, "prometheusLabels": labels, "scrapeInterval": "2s"}
    return {"kubernetes": {"mode": "cluster"}, "workloads": [], "platform": platform}


def install(
    cp: LocalControlPlane,
    work: Path,
    config: dict[str, Any],
    database: Database,
    keys: PolicyKeys | None = None,
    stream: bool = False,
) -> Installed:
    """`pulumi up` of ``config`` (stack_config) on ``cp``, through the Automation API, with a file
    backend in ``work``; the scheduler's bootstrap admin token is made here, OPA's are ``keys``."""
    from pulumi import automation as auto

    from greenops.common.clock import system_clock
    from greenops.engine import automation
    from greenops.stack import program

    (work / "state").mkdir(parents=True)
    env = {"PULUMI_BACKEND_URL": f"file://{work / 'state'}"}

    # the node's record runs on the real clock, and so does the pass
    def run_program() -> None:
        program.run(now=system_clock({}))

    stack = automation.inline_stack("node", run_program, work, env)
    stack.set_all_config({f"greenops:{k}": auto.ConfigValue(json.dumps(v)) for k, v in config.items()})
    admin = secrets.token_urlsafe(32)
    credentials = {
        "schedulerAdminToken": admin,
        "schedulerDatabaseUrl": database.in_cluster,
        "kubeconfig": cp.kubeconfig_path.read_text(),
        **(keys.secrets() if keys else {}),
    }
    stack.set_all_config({f"greenops:{k}": auto.ConfigValue(v, secret=True) for k, v in credentials.items()})
    began = time.monotonic()
    result = automation.run(stack, "up", stream=stream)
    if result.summary.result != "succeeded":
        raise ControlPlaneError(f"pulumi up on the node: {result.summary.result}")
    with cp.client() as k:
        svc = k.get(f"/api/v1/namespaces/{SCHEDULER_NS}/services/{SCHEDULER_SERVICE}").json()
    return Installed(f"http://{svc['spec']['clusterIP']}:{SCHEDULER_PORT}", admin, time.monotonic() - began)


def pods_table(cp: LocalControlPlane) -> list[dict[str, str]]:
    """Every pod as `kubectl get pods -A` lists it: namespace, name, ready, status, restarts, node."""
    with cp.client() as k:
        items = k.get("/api/v1/pods").json()["items"]
    rows = []
    for p in sorted(items, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
        statuses = p["status"].get("containerStatuses") or []
        rows.append(
            {
                "NAMESPACE": p["metadata"]["namespace"],
                "NAME": p["metadata"]["name"],
                "READY": f"{sum(s['ready'] for s in statuses)}/{len(p['spec']['containers'])}",
                "STATUS": p["status"].get("phase", ""),
                "RESTARTS": str(sum(s["restartCount"] for s in statuses)),
                "NODE": p["spec"].get("nodeName", ""),
            }
        )
    return rows


def tenant_client(cp: LocalControlPlane, user: str, namespace: str) -> httpx.Client:
    """``user``'s own credential (a client certificate of the cluster's CA), whose RBAC covers
    VmTemplates in ``namespace`` only, as a platform team hands a tenant its kubeconfig."""
    if cp.authority is None:
        raise ControlPlaneError("the control plane is not started: it has no client CA yet")
    verbs = ["create", "get", "list", "delete"]
    rules = [{"apiGroups": [VMTEMPLATE_GROUP], "resources": ["vmtemplates"], "verbs": verbs}]
    binding = {
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "vmtemplates"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    with cp.client() as k:
        rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
        for path, body in (("roles", {"metadata": {"name": "vmtemplates"}, "rules": rules}), ("rolebindings", binding)):
            r = k.post(f"{rbac}/{path}", json=body)
            if r.status_code not in (201, 409):  # 409: made for an earlier client of the same user
                raise ControlPlaneError(f"{namespace}/{path} for {user}: {r.status_code} {r.text[:300]}")
    cert = cp.authority.issue_client(user, (), f"user-{user}")
    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE  # the API server's serving cert is self-signed
    tls.load_cert_chain(cert.cert, cert.key)
    return httpx.Client(base_url=cp.server, verify=tls, timeout=30)
