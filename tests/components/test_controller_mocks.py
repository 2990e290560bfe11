"""The cluster path's controller as the platform installs it, under Pulumi mocks: a hardened
Deployment beside the scheduler with two tokens (the API server's and the scheduler's audience),
exactly the RBAC it uses, its principal at the scheduler, its NetworkPolicy, and nothing at all
when it is off."""

from __future__ import annotations

import pulumi
import pytest
import yaml

from components.hardening import NON_ROOT_ID
from greenops.identity.kubernetes import AUDIENCE
from greenops.identity.principals import load_principals
from greenops.renderers import rendered_kinds
from tests.components.test_platform_mocks import PROD, Mocks, collect, of, run_platform, unwrap
from tests.support.pss import violations

ACCOUNT = "greenops/greenops-controller"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"


@pytest.fixture
def prod() -> Mocks:
    # per test: the offline stand-in for Config Connector's bundle (tests/conftest.py) is per test too
    return collect(PROD)


def controller_deployment(m: Mocks):
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.name == "controller-deploy"]
    return deploy


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_the_deployment_is_hardened_like_the_scheduler_and_runs_from_its_image(prod):
    deploy = controller_deployment(prod)
    assert deploy.inputs["metadata"]["name"] == "greenops-controller"
    assert deploy.inputs["metadata"]["namespace"] == "greenops"  # the scheduler's
    assert deploy.inputs["spec"]["replicas"] == 2
    pod = deploy.inputs["spec"]["template"]["spec"]
    assert violations(pod) == []  # the Pod Security Standard restricted
    assert pod["securityContext"]["runAsUser"] == NON_ROOT_ID
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    [container] = pod["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["runAsNonRoot"] is True
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"cpu": "500m", "memory": "256Mi"},
    }
    [scheduler] = [r for r in of(prod, "kubernetes:apps/v1:Deployment") if r.name == "scheduler-deploy"]
    assert container["image"] == scheduler.inputs["spec"]["template"]["spec"]["containers"][0]["image"]
    assert container["command"] == ["python", "-m", "greenops.controller"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 8080}]  # it serves /metrics only
    assert (
        flag(container["args"], "--metrics-port") == "8080"
        and flag(container["args"], "--metrics-address") == "0.0.0.0"
    )
    # the API server's token for the kube client, under its own ServiceAccount
    assert pod["automountServiceAccountToken"] is True and pod["serviceAccountName"] == "greenops-controller"


def test_it_presents_a_projected_token_bound_to_the_schedulers_audience(prod):
    pod = controller_deployment(prod).inputs["spec"]["template"]["spec"]
    [container] = pod["containers"]
    [token] = [v for v in pod["volumes"] if "projected" in v]
    [source] = token["projected"]["sources"]
    assert source == {"serviceAccountToken": {"audience": AUDIENCE, "expirationSeconds": 3600, "path": "token"}}
    [mount] = [m for m in container["volumeMounts"] if m["name"] == token["name"]]
    assert mount["readOnly"] is True
    assert flag(container["args"], "--token-file") == f"{mount['mountPath']}/token"
    # no credential in the environment: the pod's name and namespace only, from the downward API
    assert container["env"] == [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]


def test_its_flags_come_from_the_config():
    m = collect(
        {
            **PROD,
            "controller": {
                "replicas": 3,
                "readiness": "applied",
                "resyncSeconds": 20,
                "sweepSeconds": 120,
                "leaseSeconds": 30,
                "cpu": "50m",
                "memory": "128Mi",
                "cpuLimit": "200m",
            },
        }
    )
    deploy = controller_deployment(m)
    assert deploy.inputs["spec"]["replicas"] == 3
    [container] = deploy.inputs["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert flag(args, "--scheduler-url") == "http://greenops-scheduler.greenops.svc:8080"
    assert flag(args, "--lease-name") == "greenops-controller"
    assert flag(args, "--identity") == "$(POD_NAME)"
    assert "--lease-namespace" not in args  # POD_NAMESPACE: the Lease is in its own namespace, with its Role
    assert (flag(args, "--lease-seconds"), flag(args, "--renew-deadline")) == ("30", "20")
    assert (flag(args, "--sweep-seconds"), flag(args, "--resync-seconds")) == ("120", "20")
    assert flag(args, "--readiness") == "applied"
    assert container["resources"]["limits"] == {"cpu": "200m", "memory": "128Mi"}


def test_bad_controller_config_names_the_key():
    from greenops.stack import program

    for section, says in (
        ({"replicas": 0}, r"greenops:platform\.controller\.replicas"),
        ({"readiness": "ready"}, r"greenops:platform\.controller\.readiness"),
        ({"leaseSeconds": 1}, r"greenops:platform\.controller\.leaseSeconds"),
        ({"resync_seconds": 30, "bogus": 1}, r"greenops:platform\.controller\.bogus"),
    ):
        run_platform({**PROD, "controller": section})
        with pytest.raises(pulumi.RunError, match=says):
            program.run()


def test_its_rbac_is_exactly_what_it_uses(prod):
    [cluster_role] = [r for r in of(prod, CLUSTER_ROLE) if r.name == "controller-follow"]
    assert cluster_role.inputs["metadata"]["name"] == "greenops-controller-greenops"
    vmtemplates, *rendered, events, placements, placement_status, secrets = cluster_role.inputs["rules"]
    # Events on the VmTemplates (kubectl describe): created, never read back or changed
    assert events == {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
    # VmPlacements: created (one a former VmTemplate of the name left is replaced), never listed;
    # their status written through its subresource only
    assert placements == {
        "apiGroups": ["greenops.io"],
        "resources": ["vmplacements"],
        "verbs": ["get", "create", "delete"],
    }
    # a run's report Secret: created, never read, changed or deleted
    assert secrets == {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}
    assert placement_status == {"apiGroups": ["greenops.io"], "resources": ["vmplacements/status"], "verbs": ["patch"]}
    assert vmtemplates == {
        "apiGroups": ["composition.krateo.io"],
        "resources": ["vmtemplates"],
        "verbs": ["get", "list", "watch", "patch"],
    }
    # read only, and only the kinds the renderers emit (the VmTemplate chart renders the same)
    assert {v for rule in rendered for v in rule["verbs"]} == {"get", "list"}
    granted = {(rule["apiGroups"][0], res) for rule in rendered for res in rule["resources"]}
    assert all(len(rule["apiGroups"]) == 1 for rule in rendered)
    assert {group for group, _ in granted} == {api.split("/")[0] for api, _ in rendered_kinds()}
    assert len(granted) == len(set(rendered_kinds()))
    assert {
        ("compute.azure.com", "virtualmachines"),
        ("network.azure.com", "virtualnetworks"),
        ("compute.cnrm.cloud.google.com", "computeinstances"),
        ("ec2.services.k8s.aws", "instances"),
    } <= granted
    assert "*" not in str(cluster_role.inputs["rules"])
    # its one Lease, in its own namespace; create cannot be limited by name
    [role] = [r for r in of(prod, ROLE) if r.name == "controller-lease"]
    assert role.inputs["metadata"]["namespace"] == "greenops"
    assert role.inputs["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["greenops-controller"],
            "verbs": ["get", "update"],
        },
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    ]
    subject = [{"kind": "ServiceAccount", "name": "greenops-controller", "namespace": "greenops"}]
    bindings = {r.inputs["roleRef"]["name"]: r for r in m_bindings(prod) if r.inputs.get("subjects") == subject}
    assert set(bindings) == {"greenops-controller-greenops", "greenops-controller-lease"}
    assert bindings["greenops-controller-greenops"].inputs["roleRef"]["kind"] == "ClusterRole"
    assert bindings["greenops-controller-lease"].inputs["roleRef"]["kind"] == "Role"
    assert bindings["greenops-controller-lease"].inputs["metadata"]["namespace"] == "greenops"


def m_bindings(m: Mocks) -> list:
    return of(m, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding") + of(
        m, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
    )


def test_the_scheduler_accepts_it_as_a_reporting_principal(prod, tmp_path):
    [cm] = [
        r
        for r in of(prod, "kubernetes:core/v1:ConfigMap")
        if r.inputs["metadata"]["name"] == "greenops-scheduler-principals"
    ]
    text = unwrap(cm.inputs["data"])["principals.yaml"]
    entries = yaml.safe_load(text)["principals"]
    assert {"serviceAccount": ACCOUNT, "role": "report", "paths": ["cluster"]} in entries
    # the scheduler's own loader reads it as such: every tenant, the cluster path, never booking
    (tmp_path / "principals.yaml").write_text(text)
    principal = load_principals(tmp_path / "principals.yaml").by_account[ACCOUNT]
    assert (principal.role, principal.tenants, principal.paths) == ("report", None, frozenset({"cluster"}))
    assert principal.has("report") and not principal.has("write")


def test_its_network_policy_admits_nothing_and_reaches_the_api_server_and_the_scheduler(prod):
    [policy] = [
        r
        for r in of(prod, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if r.inputs["metadata"]["name"] == "greenops-allow-cluster-path-controller"
    ]
    spec = policy.inputs["spec"]
    assert policy.inputs["metadata"]["namespace"] == "greenops"
    assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "greenops-controller"
    assert spec["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in spec
    api_server, scheduler = spec["egress"]
    assert api_server["to"] == [{"ipBlock": {"cidr": "172.16.0.0/28"}}]
    assert scheduler == {
        "to": [
            {
                "podSelector": {
                    "matchLabels": {
                        "app.kubernetes.io/name": "greenops-scheduler",
                        "app.kubernetes.io/part-of": "greenops",
                    }
                }
            }
        ],
        "ports": [{"protocol": "TCP", "port": 8080}],
    }
    # DNS comes from the namespace's allow-dns, as for every pod of the platform
    names = {r.inputs["metadata"]["name"] for r in of(prod, "kubernetes:networking.k8s.io/v1:NetworkPolicy")}
    assert "greenops-allow-dns" in names


def controller_objects(m: Mocks) -> list:
    return [
        r
        for r in m.resources
        if r.typ == "greenops:platform:Controller"
        or "greenops-controller" in str((r.inputs.get("metadata") or {}).get("name", ""))
        or r.inputs.get("metadata", {}).get("name") == "greenops-allow-cluster-path-controller"
    ]


@pytest.mark.parametrize(
    "off",
    [
        {"controller": {"enabled": False}},
        {"policy": {"enabled": False}},  # no admission books a hold for it to follow
    ],
    ids=["disabled", "without-policy"],
)
def test_off_it_declares_nothing_and_the_scheduler_does_not_accept_it(off):
    m = collect({**PROD, **off})
    assert controller_objects(m) == []
    [cm] = [
        r
        for r in of(m, "kubernetes:core/v1:ConfigMap")
        if r.inputs["metadata"]["name"] == "greenops-scheduler-principals"
    ]
    principals = yaml.safe_load(unwrap(cm.inputs["data"])["principals.yaml"])["principals"]
    assert not [p for p in principals if p.get("serviceAccount") == ACCOUNT]
    # nothing left for the scheduler to review: no API token, no API server in its egress
    [scheduler] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.name == "scheduler-deploy"]
    assert scheduler.inputs["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    [allow] = [
        r
        for r in of(m, "kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if r.inputs["metadata"]["name"] == "greenops-allow-scheduler"
    ]
    assert not [rule for rule in allow.inputs["spec"]["egress"] if "ipBlock" in str(rule)]


def test_without_the_scheduler_it_is_off_even_when_asked_for():
    from components.platform_config import PlatformConfig

    c = PlatformConfig.model_validate({"scheduler": {"enabled": False}, "controller": {"enabled": True}})
    assert c.controller.enabled is False
    m = collect({**PROD, "scheduler": {"enabled": False}, "controller": {"enabled": True}})
    assert controller_objects(m) == []


def test_its_account_declared_again_by_the_stack_is_refused():
    from greenops.stack import program

    again = {"serviceAccount": ACCOUNT, "role": "read", "paths": ["cluster"]}
    run_platform({**PROD, "scheduler": {"serviceAccountPrincipals": [again]}})
    with pytest.raises(Exception, match=f"{ACCOUNT} declared more than once"):
        pulumi.runtime.test(program.run)()


def test_a_reporter_for_every_tenant_is_the_cluster_paths_only():
    from pydantic import ValidationError

    from components.platform_config import ServiceAccountPrincipal

    ok = ServiceAccountPrincipal(service_account="ci/watcher", role="report", paths=["cluster"])
    assert ok.tenants is None
    with pytest.raises(ValidationError, match="ci/watcher: a reporting principal for every tenant"):
        ServiceAccountPrincipal(service_account="ci/watcher", role="report", paths=["cluster", "pulumi"])
    assert ServiceAccountPrincipal(service_account="ci/watcher", role="report", tenants=["a"], paths=["pulumi"])
