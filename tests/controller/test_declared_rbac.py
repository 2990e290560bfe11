"""The controller under exactly the rights the platform declares for it, on a real API server.

The ServiceAccount, ClusterRole, Role and their bindings are taken from the platform program as
Pulumi evaluates it (the same mocks as tests/components/test_controller_mocks.py) and applied to a
real kube-apiserver with RBAC. The controller then runs with a token the API server issues for that
ServiceAccount (TokenRequest) and with the Deployment's own flags: it must lead, confirm a hold,
open a gate (patching its VmTemplate), read the cloud operator's objects and record the whole life,
never once refused. And the same token must be refused everything else: the API server's own access
reviews show the declared verbs allowed, and nothing beyond them.
"""

from __future__ import annotations

import base64
import re
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from greenops.common.clock import parse_time, set_clock_file, stamp
from greenops.common.errors import GreenOpsError
from greenops.local.controller import ControllerProcess
from greenops.local.controlplane import free_port
from greenops.observability.names import CONTROLLER_LEADER
from greenops.renderers import provider_kinds
from greenops.validation.crd import default_crd_dir
from tests.components.bundles import offline_fetch
from tests.components.test_controller_mocks import controller_deployment, controller_objects, flag
from tests.components.test_platform_mocks import PROD, collect
from tests.controller.test_lifecycle import (
    LEAD,
    act_as_aso,
    act_as_krateo,
    cluster_object,
    events_of,
    phase_is,
    placement_shows,
    render_note,
)
from tests.support.cluster_path import template
from tests.support.declared import manifest, reveal
from tests.support.upstream_crds import local_crd

pytestmark = [pytest.mark.integration, pytest.mark.tools, pytest.mark.crds]

KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
RESYNC = "0.3"  # the lifecycle pass's interval here, instead of the Deployment's 30 s: timing, not rights


# -- what the platform declares -----------------------------------------------------------------------
class Declared:
    """The controller's RBAC objects and Deployment, as manifests, from the platform program."""

    def __init__(self, objects: list[dict], deployment: dict):
        self.rbac = [o for o in objects if o["kind"] in KINDS]
        [self.account] = self.of("ServiceAccount")
        [self.cluster_role] = self.of("ClusterRole")
        [self.role] = self.of("Role")
        self.deployment = deployment
        [self.container] = self.deployment["spec"]["template"]["spec"]["containers"]

    def of(self, kind: str) -> list[dict]:
        return [o for o in self.rbac if o["kind"] == kind]

    @property
    def namespace(self) -> str:
        return str(self.account["metadata"]["namespace"])

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.account['metadata']['name']}"

    @property
    def lease_namespace(self) -> str:
        """Where the Lease is: the pod's namespace (POD_NAMESPACE, no --lease-namespace), the Role's."""
        assert "--lease-namespace" not in self.container["args"]
        assert self.deployment["metadata"]["namespace"] == self.role["metadata"]["namespace"]
        return str(self.role["metadata"]["namespace"])

    def args(self, env: dict[str, str], overrides: dict[str, str]) -> list[str]:
        """The container's args as the kubelet would pass them ($(VAR) from ``env``), with
        ``overrides`` for the flags that name this cluster's endpoints and files."""
        args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in self.container["args"]]
        for name, value in overrides.items():
            args[args.index(name) + 1] = value
        return args


@pytest.fixture(scope="module")
def declared() -> Declared:
    with pytest.MonkeyPatch.context() as patch:  # tests/conftest.py's offline bundle, for this module's fixture
        patch.setattr("components.operator_bundle.fetch", offline_fetch)
        m = collect(PROD)
    objects = [
        manifest(r.typ, r.name, reveal(r.inputs)) for r in controller_objects(m) if r.typ.startswith("kubernetes:")
    ]
    deploy = controller_deployment(m)
    return Declared(objects, manifest(deploy.typ, deploy.name, reveal(deploy.inputs)))


def flat(rules: list[dict]) -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, resourceName or "") of every rule: how RBAC reads them."""
    return {
        (group, resource, verb, name)
        for rule in rules
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule["verbs"]
        for name in rule.get("resourceNames") or [""]
    }


# -- the real API server with the declared rights ----------------------------------------------------
def api_path(obj: dict) -> str:
    api = obj["apiVersion"]
    base = f"/apis/{api}" if "/" in api else f"/api/{api}"
    ns = obj["metadata"].get("namespace")
    return f"{base}{f'/namespaces/{ns}' if ns else ''}/{obj['kind'].lower()}s"


@pytest.fixture(scope="module")
def granted(cluster, declared) -> Declared:
    """The declared RBAC applied, strictly (an unknown field is refused, not dropped), in its namespaces."""
    with cluster.cp.client() as k:
        for ns in sorted({o["metadata"]["namespace"] for o in declared.rbac if o["metadata"].get("namespace")}):
            r = k.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
            assert r.status_code == 201, r.text
        for obj in declared.rbac:
            r = k.post(api_path(obj), params={"fieldValidation": "Strict"}, json=obj)
            assert r.status_code == 201, (obj["kind"], r.text)
    return declared


def request_token(cluster, namespace: str, name: str) -> str:
    with cluster.cp.client() as k:
        r = k.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            json={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
        )
        assert r.status_code == 201, r.text
        return str(r.json()["status"]["token"])


@pytest.fixture(scope="module")
def token(cluster, granted) -> str:
    return request_token(cluster, granted.namespace, granted.account["metadata"]["name"])


@pytest.fixture(scope="module")
def kubeconfig(cluster, token, tmp_path_factory) -> Path:
    """The ServiceAccount's kubeconfig: the API server's address, its serving CA, the token."""
    ca = (cluster.cp.workdir / "pki" / "apiserver.crt").read_bytes()  # the self-signed chain it serves
    config = cluster.cp.kubeconfig()
    [entry] = config["clusters"]
    entry["cluster"] = {"server": cluster.cp.server, "certificate-authority-data": base64.b64encode(ca).decode()}
    user = "greenops-controller"
    config["users"] = [{"name": user, "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = user
    path = tmp_path_factory.mktemp("sa") / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def as_account(cluster, token: str) -> httpx.Client:
    ca = ssl.create_default_context(cafile=str(cluster.cp.workdir / "pki" / "apiserver.crt"))
    return httpx.Client(base_url=cluster.cp.server, verify=ca, timeout=30, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture(scope="module")
def operator_kinds(cluster):
    """ASO's real CRDs for every kind the Azure renderer emits, served without the operator."""
    for api_version, kind in provider_kinds("azure"):
        group = api_version.split("/")[0]
        [path] = [
            p
            for p in default_crd_dir().glob(f"{group}_*.yaml")
            if yaml.safe_load(p.read_text())["spec"]["names"]["kind"] == kind
        ]
        cluster.cp.create_crd(local_crd(yaml.safe_load(path.read_text())))


@pytest.fixture
def clock(tmp_path):
    path = tmp_path / "now"
    set_clock_file(path, datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2))
    return path


# -- the controller under them -------------------------------------------------------------------------
def without_timestamps(log: str) -> str:
    return re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", "", log, flags=re.MULTILINE)


def refusals(log: str) -> list[str]:
    text = without_timestamps(log)
    return [line for line in text.splitlines() if re.search(r"\b403\b", line) or "forbidden" in line.lower()]


@contextmanager
def showing_log(process: ControllerProcess) -> Iterator[None]:
    """A failed expectation says what the controller logged (a refusal, most likely)."""
    try:
        yield
    except (AssertionError, GreenOpsError) as exc:
        tail = process.log.read_text(errors="replace")[-3000:] if process.log.exists() else ""
        raise AssertionError(f"{exc}\n--- controller log ---\n{tail}") from None


def test_the_token_is_the_declared_service_account(cluster, granted, token):
    with as_account(cluster, token) as k:
        r = k.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        assert r.status_code == 201, r.text
        info = r.json()["status"]["userInfo"]
    assert info["username"] == granted.user
    assert f"system:serviceaccounts:{granted.namespace}" in info["groups"]


def test_with_the_declared_rights_it_leads_confirms_opens_the_gate_and_records_the_life(
    cluster, granted, kubeconfig, operator_kinds, clock, tmp_path
):
    identity = "greenops-controller-7d9f-abcde"  # what the kubelet gives $(POD_NAME)
    scheduler_token = tmp_path / "scheduler-token"  # the projected token's file, here the report-role token
    scheduler_token.write_text(cluster.controller_token)
    args = granted.args(
        {"POD_NAME": identity, "POD_NAMESPACE": granted.lease_namespace},
        {
            "--scheduler-url": cluster.sched.url,
            "--token-file": str(scheduler_token),
            "--resync-seconds": RESYNC,
            # the pod's metrics port, here any free one on loopback
            "--metrics-port": str(metrics_port := free_port()),
            "--metrics-address": "127.0.0.1",
        },
    )
    assert flag(args, "--readiness") == "operator"  # it reads the operators' objects
    process = ControllerProcess(
        scheduler_url=cluster.sched.url,
        kubeconfig=kubeconfig,
        identity=identity,
        lease_namespace=granted.lease_namespace,
        clock_file=clock,
        extra_args=args,
        log=tmp_path / "controller.log",
    )
    lease_name = flag(args, "--lease-name")
    with process as c, showing_log(c):
        c.wait_leading()
        with cluster.cp.client() as k:
            lease = k.get(f"{LEASES.format(ns=granted.lease_namespace)}/{lease_name}")
            assert lease.status_code == 200, lease.text
            assert lease.json()["spec"]["holderIdentity"] == identity
        leader = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
        assert f"{CONTROLLER_LEADER.name} 1.0" in leader.splitlines()  # the Deployment's flags serve /metrics

        with cluster.cp.client() as k:  # a tenant applies it (admission books a hold)
            r = k.post(
                cluster.path("team-a", "least-privilege"),
                json=template("least-privilege", "team-a", eligibleProviders=["azure"]),
            )
            assert r.status_code == 201, r.text
            key = r.json()["metadata"]["annotations"]["greenops.io/reservation"]
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))  # watched, confirmed
        assert row["phase"] == "Scheduled"

        opened = parse_time(row["start"]) - LEAD + timedelta(seconds=7)
        set_clock_file(clock, opened)
        row = cluster.wait(key, phase_is("Provisioning"))
        assert render_note(cluster, "team-a", "least-privilege") == f"gate {stamp(opened)}"  # its patch

        # the operator's objects, read with get/list on the VM kinds only
        vm = act_as_krateo(cluster, cluster_object(cluster, "team-a", "least-privilege"))
        cluster.wait(key, lambda r: (r["lifecycle"] or {}).get("gateOpenedAt") == stamp(opened))
        ready = opened + timedelta(seconds=60)
        # the clock first, and seen: a pass reads its clock before the objects, and a readiness stamped
        # after that instant would count from the pass's own time instead
        set_clock_file(clock, ready + timedelta(seconds=30))
        c.wait_passes(2)
        act_as_aso(cluster, "team-a", vm, {"status": "True", "reason": "Succeeded", "lastTransitionTime": stamp(ready)})
        row = cluster.wait(key, phase_is("Running"))
        assert row["lifecycle"]["runningSince"] == stamp(ready)

        end = ready + timedelta(hours=1) + timedelta(seconds=2)
        set_clock_file(clock, end)
        row = cluster.wait(key, phase_is("Completed"))
        assert [e["phase"] for e in row["lifecycle"]["events"]] == ["Scheduled", "Provisioning", "Running", "Completed"]
        assert render_note(cluster, "team-a", "least-privilege") == f"end {stamp(end)}"
        c.wait_passes(3)
        assert f"confirmed {key}" in c.actions()
        # its Events too, with the declared rights (create on events, nothing more)
        told = [e["reason"] for e in events_of(cluster, "team-a", "least-privilege")]
        assert told == ["Scheduled", "Provisioning", "Rendered", "Running", "Completed"], told
        # and its VmPlacement (create, status patch), as kubectl get vmplacements shows it
        placement_shows(cluster, "team-a", "least-privilege", "Completed")
        assert "not written" not in c.log.read_text()
    # stopped: it gave the Lease up (get and update by name) on the way out
    with cluster.cp.client() as k:
        assert (
            not k.get(f"{LEASES.format(ns=granted.lease_namespace)}/{lease_name}").json()["spec"].get("holderIdentity")
        )
    log = process.log.read_text(errors="replace")
    assert refusals(log) == [], log[-3000:]
    assert "ApiException" not in log and "the next sweep retries" not in log, log[-3000:]


# -- and nothing more ------------------------------------------------------------------------------------
def review(
    k: httpx.Client, verb: str, group: str, resource: str, namespace: str = "", name: str = "", sub: str = ""
) -> bool:
    attributes = {"verb": verb, "group": group, "resource": resource, "namespace": namespace, "name": name}
    if sub:
        attributes["subresource"] = sub
    r = k.post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        json={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        },
    )
    assert r.status_code == 201, r.text
    return bool(r.json()["status"].get("allowed"))


def test_access_reviews_allow_every_declared_verb(cluster, granted, token):
    with as_account(cluster, token) as k:
        for group, resource, verb, name in sorted(flat(granted.cluster_role["rules"])):
            for ns in ("team-a", "team-b", ""):  # every namespace, and across all of them
                assert review(k, verb, group, resource, ns, name), (verb, group, resource, ns)
        for group, resource, verb, name in sorted(flat(granted.role["rules"])):
            assert review(k, verb, group, resource, granted.lease_namespace, name), (verb, resource, name)


def test_access_reviews_refuse_what_it_was_not_given(cluster, granted, token):
    lease_ns, lease = granted.lease_namespace, "greenops-controller"
    coordination, vmtemplates = "coordination.k8s.io", ("composition.krateo.io", "vmtemplates")
    refused = [
        *((verb, *vmtemplates, "team-a", "", "") for verb in ("create", "update", "delete", "deletecollection")),
        ("patch", *vmtemplates, "team-a", "x", "status"),  # its status is the composition controller's
        *(
            (verb, group, resource, "team-a", "", "")
            for group, resource in sorted(
                {(g, r) for g, r, *_ in flat(granted.cluster_role["rules"]) if r != "vmtemplates"}
            )
            for verb in ("watch", "create", "update", "patch", "delete")
            if (group, resource, verb) not in {(g, r, v) for g, r, v, _ in flat(granted.cluster_role["rules"])}
        ),
        *((verb, "", "events", "team-a", "", "") for verb in ("get", "list", "update", "patch", "delete")),
        *((verb, coordination, "leases", lease_ns, "", "") for verb in ("list", "watch", "deletecollection")),
        *((verb, coordination, "leases", lease_ns, lease, "") for verb in ("patch", "delete")),
        *((verb, coordination, "leases", lease_ns, "kube-scheduler", "") for verb in ("get", "update")),
        *(
            (verb, coordination, "leases", ns, lease, "")
            for ns in ("team-a", "kube-system")
            for verb in ("get", "update", "create")
        ),
        *(("get", "", "secrets", ns, "", "") for ns in (lease_ns, "team-a")),
        ("list", "", "secrets", "", "", ""),
        ("get", "", "configmaps", lease_ns, "", ""),
        ("list", "", "pods", "", "", ""),
        ("get", "", "namespaces", "", "team-a", ""),
        ("create", "", "serviceaccounts", lease_ns, "greenops-controller", "token"),
        ("create", "rbac.authorization.k8s.io", "rolebindings", lease_ns, "", ""),
    ]
    with as_account(cluster, token) as k:
        allowed = [r for r in refused if review(k, *r)]
    assert allowed == []


def test_its_rules_at_the_api_server_are_exactly_the_declared_ones(cluster, granted, token):
    """SelfSubjectRulesReview against an account with no binding at all: what the declared objects add
    is exactly their rules, the Role's in its namespace only."""
    with cluster.cp.client() as k:
        r = k.post(f"/api/v1/namespaces/{granted.namespace}/serviceaccounts", json={"metadata": {"name": "unbound"}})
        assert r.status_code == 201, r.text
    baseline = request_token(cluster, granted.namespace, "unbound")

    def rules(who: str, ns: str) -> tuple[set, list]:
        with as_account(cluster, who) as k:
            r = k.post(
                "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                json={
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectRulesReview",
                    "spec": {"namespace": ns},
                },
            )
            assert r.status_code == 201, r.text
            status = r.json()["status"]
            assert status["incomplete"] is False
            return flat(status["resourceRules"]), sorted(map(str, status.get("nonResourceRules") or []))

    for ns, declared in (
        ("team-a", flat(granted.cluster_role["rules"])),
        (granted.lease_namespace, flat(granted.cluster_role["rules"]) | flat(granted.role["rules"])),
    ):
        mine, mine_paths = rules(token, ns)
        base, base_paths = rules(baseline, ns)
        assert mine - base == declared, ns
        assert mine_paths == base_paths


def test_requests_beyond_the_declared_rights_are_refused(cluster, granted, token):
    lease_ns = granted.lease_namespace
    with cluster.cp.client() as admin:
        r = admin.post(cluster.path("team-b", "not-yours"), json=template("not-yours", "team-b"))
        assert r.status_code == 201, r.text
        other = {"metadata": {"name": "someone-else"}, "spec": {"holderIdentity": "someone"}}
        assert admin.post(LEASES.format(ns=lease_ns), json=other).status_code == 201
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "greenops-controller"}}
    with as_account(cluster, token) as k:
        answers = {
            "delete a VmTemplate": k.delete(cluster.path("team-b", "not-yours")),
            "create a VmTemplate": k.post(cluster.path("team-b"), json=template("mine-now", "team-b")),
            "read a Secret": k.get(f"/api/v1/namespaces/{lease_ns}/secrets"),
            "read a tenant's Secrets": k.get("/api/v1/namespaces/team-b/secrets"),
            "read every Secret": k.get("/api/v1/secrets"),
            "create its Lease in another namespace": k.post(LEASES.format(ns="team-a"), json=lease),
            "write its Lease in another namespace": k.put(
                f"{LEASES.format(ns='kube-system')}/greenops-controller", json=lease
            ),
            "write another Lease in its namespace": k.put(
                f"{LEASES.format(ns=lease_ns)}/someone-else", json={**lease, "metadata": {"name": "someone-else"}}
            ),
            "list the Leases": k.get(LEASES.format(ns=lease_ns)),
        }
        # and what it is given still answers: reading the VmTemplate it may not delete
        assert k.get(cluster.path("team-b", "not-yours")).status_code == 200
    refused = {what: r.status_code for what, r in answers.items()}
    assert refused == dict.fromkeys(answers, 403)
    for r in answers.values():
        assert r.json()["reason"] == "Forbidden" and granted.user in r.json()["message"]
    with cluster.cp.client() as admin:
        assert admin.get(cluster.path("team-b", "not-yours")).status_code == 200
        assert admin.get(cluster.path("team-b", "mine-now")).status_code == 404
