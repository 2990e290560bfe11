"""Against a hostile tenant, what the prod and staging stacks declare (under mocks, with their own
stack files): every pod meets the Pod Security Standard ``restricted`` with requests and limits and
no token it does not use; every platform namespace denies by default and allows its flows by name;
OPA's webhook is reachable only from the API server and never through the Ingress; the cloud
roles act only on what the renderers tag. tests/test_manifest_scan.py runs the scanner over the
same objects."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pulumi
import pytest

from components.aws_controllers import COMPANIONS, ec2_policy
from greenops.policies import QUERY_PACKAGES
from greenops.renderers.base import MANAGED_BY, MANAGED_BY_TAG
from tests.components.test_platform_mocks import PROD, of, run_platform
from tests.support.declared import evaluate_stack
from tests.support.pss import containers, pod_specs, violations

REPO = Path(__file__).resolve().parents[2]
STACKS = ["prod", "staging"]


@pytest.fixture(scope="module")
def declared():
    cache = {}

    def get(stack: str):
        if stack not in cache:
            cache[stack] = evaluate_stack(stack)
        return cache[stack]

    return get


def kinds(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


# -- pods ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stack", STACKS)
def test_every_declared_pod_meets_the_restricted_standard(declared, stack):
    objects = declared(stack).objects
    pods = list(pod_specs(objects))
    expected = {"Deployment opa/opa", "Deployment greenops/greenops-scheduler"}
    assert expected <= {label for label, _ in pods}
    assert {label: violations(pod) for label, pod in pods} == {label: [] for label, _ in pods}
    # the Pulumi operator builds the workspace pod: its restricted profile is asked for by name
    for s in kinds(objects, "Stack"):
        assert s["spec"]["workspaceTemplate"]["spec"]["securityProfile"] == "restricted"


@pytest.mark.parametrize("stack", STACKS)
def test_the_namespaces_of_only_our_pods_enforce_restricted(declared, stack):
    """The API server, not only this program, refuses a pod there that is not `restricted`
    (the real node's suite shows it refusing one: tests/node/test_platform_pods.py)."""
    labels = {
        n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in kinds(declared(stack).objects, "Namespace")
    }
    for ns in ("opa", "greenops"):
        for mode in ("enforce", "audit", "warn"):
            assert labels[ns].get(f"pod-security.kubernetes.io/{mode}") == "restricted", (ns, mode)


@pytest.mark.parametrize("stack", STACKS)
def test_every_container_has_requests_and_limits_and_a_read_only_root_where_it_can(declared, stack):
    for label, pod in pod_specs(declared(stack).objects):
        for where, c in containers(pod):
            r = c.get("resources") or {}
            for part in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(r.get(part) or {}), f"{label} {where}: {part}"
            if label.startswith("Deployment"):  # MLServer (InferenceService) writes beside its models
                assert c["securityContext"]["readOnlyRootFilesystem"] is True, f"{label} {where}"
    for s in kinds(declared(stack).objects, "Stack"):
        r = s["spec"]["workspaceTemplate"]["spec"]["resources"]
        assert {"cpu", "memory"} <= set(r["requests"]) and {"cpu", "memory"} <= set(r["limits"])


@pytest.mark.parametrize("stack", STACKS)
def test_only_the_pod_that_calls_the_api_mounts_a_token(declared, stack):
    mounted = {
        label
        for label, pod in pod_specs(declared(stack).objects)
        if pod.get("automountServiceAccountToken") is not False
    }
    assert mounted == {
        "Deployment opa/opa",  # kube-mgmt replicates VmTemplates and Namespaces
        "Deployment greenops/greenops-controller",  # follows VmTemplates, holds its Lease
        "Deployment greenops/greenops-scheduler",  # reviews the controller's token (TokenReview)
    }


def test_the_scheduler_token_is_a_file_and_only_opa_keeps_secrets_in_its_environment(declared):
    objects = declared("prod").objects
    for label, pod in pod_specs(objects):
        variables = {
            e["name"]
            for _, c in containers(pod)
            for e in c.get("env") or []
            if "secretKeyRef" in e.get("valueFrom", {})
        }
        if label == "Deployment opa/opa":  # read in Rego through opa.runtime().env
            assert variables == {
                "GREENOPS_SCHEDULER_TOKEN",
                "GREENOPS_OPA_QUERY_TOKEN",
                "GREENOPS_OPA_ADMIN_TOKEN",
                "GREENOPS_OPA_METRICS_TOKEN",
                "GREENOPS_OPA_WEBHOOK_TOKEN",  # the webhook's process only
            }
        elif label == "Deployment greenops/greenops-scheduler":  # no file option for the database URL
            assert variables == {"GREENOPS_SCHEDULER_DATABASE"}
        else:
            assert variables == set(), label


def test_the_restricted_check_catches_what_it_must():
    good = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {"name": "c", "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
        ],
        "volumes": [{"name": "t", "emptyDir": {}}],
    }
    assert violations(good) == []
    broken = {
        "privileged": lambda p: p["containers"][0]["securityContext"].update(privileged=True),
        "escalation": lambda p: p["containers"][0]["securityContext"].pop("allowPrivilegeEscalation"),
        "capabilities": lambda p: p["containers"][0]["securityContext"].pop("capabilities"),
        "added": lambda p: p["containers"][0]["securityContext"]["capabilities"].update(add=["NET_ADMIN"]),
        "root": lambda p: p["securityContext"].pop("runAsNonRoot"),
        "uid 0": lambda p: p["containers"][0]["securityContext"].update(runAsUser=0),
        "seccomp": lambda p: p["securityContext"].pop("seccompProfile"),
        "unconfined": lambda p: p["containers"][0]["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        "hostPath": lambda p: p["volumes"].append({"name": "h", "hostPath": {"path": "/"}}),
        "hostNetwork": lambda p: p.update(hostNetwork=True),
        "hostPort": lambda p: p["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
        "init": lambda p: p.update(initContainers=[{"name": "i"}]),
    }
    for what, breaks in broken.items():
        pod = copy.deepcopy(good)
        breaks(pod)
        assert violations(pod), what


# -- network -------------------------------------------------------------------------------------------
def policies(objects: list[dict]) -> dict[tuple[str, str], dict]:
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"] for o in kinds(objects, "NetworkPolicy")}


@pytest.mark.parametrize("stack", STACKS)
def test_every_platform_namespace_denies_by_default(declared, stack):
    d = declared(stack)
    np = policies(d.objects)
    # every namespace with the platform's pods, or an operator's release; Config Connector's are made by
    # its operator at run time (components/network_policy.py)
    namespaces = {o["metadata"]["name"] for o in kinds(d.objects, "Namespace")} | set(d.helm_namespaces)
    covered = {ns for ns, name in np if name == "greenops-default-deny"}
    assert namespaces and namespaces <= covered, namespaces - covered
    for ns in covered:
        assert np[(ns, "greenops-default-deny")] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
        [dns] = np[(ns, "greenops-allow-dns")]["egress"]
        assert {p["port"] for p in dns["ports"]} == {53}


def test_opas_webhook_port_admits_only_the_api_server_and_its_api_only_named_callers(declared):
    np = policies(declared("prod").objects)
    opa = np[("opa", "greenops-allow-opa")]
    by_port = {rule["ports"][0]["port"]: rule["from"] for rule in opa["ingress"]}
    assert set(by_port) == {8443, 8444}
    assert by_port[8444] == [{"ipBlock": {"cidr": "10.0.0.0/24"}}, {"ipBlock": {"cidr": "10.0.1.0/24"}}]
    assert not [p for p in by_port[8443] if "ipBlock" in p]
    assert {json.dumps(p["namespaceSelector"], sort_keys=True) for p in by_port[8443]} == {
        '{"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}',
        '{"matchLabels": {"kubernetes.io/metadata.name": "greenops-reconciler"}}',
        '{"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}',  # Prometheus's scrapes (monitoring on)
    }
    # the scheduler admits OPA, the ingress controller, the reconciler and, beside it, the cluster
    # path's controller, on its one port
    [rule] = np[("greenops", "greenops-allow-scheduler")]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8080}]
    other_namespaces = [p for p in rule["from"] if "namespaceSelector" in p]
    assert {p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for p in other_namespaces} == {
        "ingress-nginx",
        "greenops-reconciler",
        "opa",
        "monitoring",  # Prometheus, with greenops:platform.monitoring on
    }
    assert [p for p in rule["from"] if p not in other_namespaces] == [
        {
            "podSelector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "greenops-controller",
                    "app.kubernetes.io/part-of": "greenops",
                }
            }
        }
    ]


def test_network_policies_need_the_api_servers_addresses_and_check_them():
    from greenops.stack import program

    for network, says in (
        ({}, r"networkPolicy: .*apiServerCidrs is required"),
        ({"apiServerCidrs": ["10.0.0.1/24"]}, r"networkPolicy\.apiServerCidrs.*has host bits set"),
    ):
        run_platform({**PROD, "networkPolicy": network})
        with pytest.raises(pulumi.RunError, match=says):
            program.run()


# -- external access -----------------------------------------------------------------------------------
def test_the_ingress_routes_opas_decision_api_only(declared):
    [opa] = [i for i in kinds(declared("prod").objects, "Ingress") if i["metadata"]["namespace"] == "opa"]
    paths = [p["path"] for rule in opa["spec"]["rules"] for p in rule["http"]["paths"]]
    assert paths == [f"/v1/data/greenops/{package}" for package in QUERY_PACKAGES]
    assert "/" not in paths and not [p for p in paths if p.startswith("/v1/policies")]
    # the webhook's port is not the Ingress's backend
    ports = {p["backend"]["service"]["port"]["number"] for rule in opa["spec"]["rules"] for p in rule["http"]["paths"]}
    assert ports == {443}


def test_the_routed_packages_are_those_a_query_token_may_read():
    rego = (REPO / "greenops" / "policies" / "rego" / "authz.rego").read_text()
    [listed] = re.findall(r"^query_packages := \{([^}]*)\}", rego, re.M)
    assert sorted(re.findall(r'"([^"]+)"', listed)) == sorted(QUERY_PACKAGES)


# -- cloud roles ---------------------------------------------------------------------------------------
MUTATING = re.compile(r"^ec2:(?!Describe)")


def test_every_mutating_ec2_action_is_conditioned_on_the_greenops_tag():
    policy = ec2_policy("aws", "123456789012")
    owner = {f"aws:ResourceTag/{MANAGED_BY_TAG}", f"aws:RequestTag/{MANAGED_BY_TAG}", "ec2:CreateAction"}
    for s in policy["Statement"]:
        mutating = [a for a in s["Action"] if MUTATING.match(a)]
        if not mutating:
            assert s["Action"] == ["ec2:Describe*"]
            continue
        assert s["Resource"] != "*" and "*" not in s["Resource"], s["Sid"]
        condition = {k: v for test in (s.get("Condition") or {}).values() for k, v in test.items()}
        if not condition:
            # a companion of a tagged resource (the AMI of a launch, a rule's own id): never alone
            [action] = mutating
            types = {arn.split(":")[5].split("/")[0] for arn in s["Resource"]}
            assert types <= set(COMPANIONS[action]), s["Sid"]
            continue
        assert set(condition) & owner, s["Sid"]
        for key in set(condition) & (owner - {"ec2:CreateAction"}):
            assert condition[key] == MANAGED_BY, s["Sid"]
    allowed = {
        a: [s for s in policy["Statement"] if a in s["Action"]]
        for a in ("ec2:TerminateInstances", "ec2:DeleteVpc", "ec2:AuthorizeSecurityGroupIngress", "ec2:RunInstances")
    }
    for action, statements in allowed.items():
        conditioned = [s for s in statements if s.get("Condition")]
        assert conditioned, action
        for s in statements:
            if not s.get("Condition"):
                assert action in COMPANIONS, action
    # the owner tag cannot be taken off, nor set to something else
    [untag] = [s for s in policy["Statement"] if s["Action"] == ["ec2:DeleteTags"]]
    assert untag["Condition"]["ForAllValues:StringNotEquals"] == {"aws:TagKeys": [MANAGED_BY_TAG]}


def test_the_renderers_tag_what_the_ack_role_requires(catalog, make_workload):
    from greenops.models import Decision
    from greenops.renderers import RenderSettings, render

    d = Decision(
        provider="aws",
        region="eu-north-1",
        zone=catalog.region("aws", "eu-north-1").zone,
        scheduling_time="2030-01-01T00:00:00Z",
        vm_size="c6a.xlarge",
        image=catalog.image("aws", "eu-north-1"),
    )
    objs = render(make_workload(name="tagged"), d, RenderSettings(ssh_public_key="ssh-ed25519 AAAA k"))
    assert {o["kind"] for o in objs} >= {"VPC", "Subnet", "SecurityGroup"}
    for o in objs:
        assert {"key": MANAGED_BY_TAG, "value": MANAGED_BY} in o["spec"]["tags"], o["kind"]


def test_the_ack_role_is_attached_in_the_clusters_account():
    from tests.components.test_platform_mocks import collect

    m = collect(PROD)
    [policy] = of(m, "aws:iam/policy:Policy")
    assert json.loads(policy.inputs["policy"]) == ec2_policy("aws", "123456789012")


def test_operators_admit_only_the_api_server_and_the_workspace_reaches_opa_and_the_scheduler(declared):
    np = policies(declared("prod").objects)
    api_server = [{"ipBlock": {"cidr": "10.0.0.0/24"}}, {"ipBlock": {"cidr": "10.0.1.0/24"}}]
    for ns in ("cert-manager", "azureserviceoperator-system", "ack-system", "kserve", "krateo-system"):
        controller = np[(ns, "greenops-allow-controller")]
        assert controller["ingress"] == [{"from": api_server}], ns
        assert {p["port"] for rule in controller["egress"] for p in rule["ports"]} == {443, 6443}, ns
    # in the shared composition namespace, the controller profile leaves the platform's own pods out
    composition = np[("greenops", "greenops-allow-controller")]["podSelector"]["matchExpressions"]
    assert {"key": "app.kubernetes.io/part-of", "operator": "NotIn", "values": ["greenops"]} in composition
    workspace = np[("greenops-reconciler", "greenops-allow-workspace")]
    reached = {
        (peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], rule["ports"][0]["port"])
        for rule in workspace["egress"]
        for peer in rule["to"]
        if "namespaceSelector" in peer
    }
    assert reached == {("opa", 8443), ("greenops", 8080)}
    [forecasters] = np[("forecasting", "greenops-allow-forecasters")]["ingress"]
    assert forecasters["from"][0]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "greenops-scheduler", "app.kubernetes.io/part-of": "greenops"}
    }
