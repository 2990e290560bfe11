"""WorkloadReconciler under Pulumi mocks: the pinned operator chart, the Stack and its RBAC valid
against the real schemas, the program source and state backend wired to Secrets only, the resync
interval, and bad configuration refused by key."""

from __future__ import annotations

import json
import os
import subprocess

import kubernetes.client
import pulumi
import pytest
import yaml
from pydantic import ValidationError

from components.platform_config import VERSIONS_FILE, PlatformConfig
from tests.components.test_platform_mocks import ALL_OFF as OFF
from tests.components.test_platform_mocks import SECRET_SIG, Mocks, collect, of, run_platform, stack_platform

STACK = "kubernetes:pulumi.com/v1:Stack"
GIT = {"projectRepo": "https://github.com/example/greenops-platform.git", "branch": "main"}
S3 = {"s3": {"bucket": "greenops-pulumi-state", "region": "eu-west-1", "endpoint": "https://s3.example.com"}}
RECONCILER = {"enabled": True, "stack": "prod-workloads", "git": GIT, "backend": S3}
VARIANTS = {
    "git+s3": RECONCILER,
    "git-commit+auth": {
        **RECONCILER,
        "git": {
            "projectRepo": "git@github.com:example/greenops-platform.git",
            "commit": "0123456789abcdef0123456789abcdef01234567",
            "repoDir": "infra",
            "gitAuth": {"secretName": "git-ssh", "type": "ssh"},
        },
    },
    "flux+cloud": {
        "enabled": True,
        "stack": "acme/prod-workloads",
        "fluxSource": {"name": "greenops", "dir": "."},
        "backend": {"pulumiCloud": {}},
        "secretConfig": {"greenops:kubeconfig": {"name": "workloads-kubeconfig", "key": "kubeconfig"}},
    },
}


def declare(reconciler: dict, interval: int | None = None, **parts) -> Mocks:
    """GreenOpsPlatform with only the reconciler (and ``parts``), given the program's reconcile interval."""
    from components.platform import GreenOpsPlatform, GreenOpsPlatformArgs, PlatformSecrets

    m = Mocks()
    pulumi.runtime.set_mocks(m, project="greenops-platform", stack="prod", preview=False)
    config = PlatformConfig.model_validate({**OFF, **parts, "reconciler": reconciler})
    extra = {} if interval is None else {"reconcile_interval_seconds": interval}

    @pulumi.runtime.test
    def go():
        # the scheduler, when a test turns it on, needs its bootstrap admin's token
        secrets = PlatformSecrets(scheduler_db_password="pw", scheduler_admin_token="admin-t0ken-for-the-scheduler")
        GreenOpsPlatform("greenops", GreenOpsPlatformArgs(config, secrets, **extra))

    go()
    return m


def stack_of(m: Mocks) -> dict:
    [stack] = of(m, STACK)
    return stack.inputs


def manifests(m: Mocks) -> list[dict]:
    """Every Kubernetes object the component declares (its Helm release aside), as applied."""
    return [
        {
            k: v
            for k, v in r.inputs.items()
            if k in ("apiVersion", "kind", "metadata", "spec", "rules", "roleRef", "subjects")
        }
        for r in m.resources
        if r.name.startswith("pko-") and r.typ.startswith("kubernetes:") and not r.typ.startswith("kubernetes:helm.sh")
    ]


def core_errors(obj: dict, model: str, path: str = "") -> list[str]:
    """Unknown fields and missing required ones, by the Kubernetes client's generated models: as
    strict for the built-in kinds as CrdSchemas is for the custom ones."""
    cls = getattr(kubernetes.client, model)
    by_json = {v: k for k, v in cls.attribute_map.items()}
    errors = [f"{path}{k}: unknown field" for k in obj if k not in by_json]
    try:  # client-side validation refuses a missing required field
        cls(**{by_json[k]: v for k, v in obj.items() if k in by_json})
    except ValueError as exc:
        errors.append(f"{path or '<root>'}: {exc}")
    for k, v in obj.items():
        typ = cls.openapi_types.get(by_json.get(k, ""), "")
        inner = typ[5:-1] if typ.startswith("list[") else typ
        if not hasattr(getattr(kubernetes.client, inner, None), "attribute_map"):
            continue  # a scalar or a free-form map
        items = enumerate(v) if typ.startswith("list[") else [(None, v)]
        errors += [
            e for i, item in items for e in core_errors(item, inner, f"{path}{k}.{'' if i is None else f'{i}.'}")
        ]
    return errors


def refs(spec: dict):
    """Every ResourceRef in a Stack spec (envRefs, secretsRef, gitAuth), with its path."""
    for key in ("envRefs", "secretsRef"):
        for name, ref in spec.get(key, {}).items():
            yield f"{key}.{name}", ref
    for mode, body in spec.get("gitAuth", {}).items():
        if "type" in body:
            yield f"gitAuth.{mode}", body
        else:
            yield from ((f"gitAuth.{mode}.{k}", ref) for k, ref in body.items())


def test_the_operator_chart_is_pinned():
    m = declare(RECONCILER)
    pin = yaml.safe_load(VERSIONS_FILE.read_text())["pulumi_kubernetes_operator"]
    [release] = of(m, "kubernetes:helm.sh/v3:Release")
    assert release.inputs["chart"] == "oci://ghcr.io/pulumi/helm-charts/pulumi-kubernetes-operator"
    assert release.inputs["version"] == pin["version"] and pin["version"].startswith("2.")
    assert release.inputs["namespace"] == "pulumi-kubernetes-operator"
    workspace = stack_of(m)["spec"]["workspaceTemplate"]["spec"]
    assert workspace["image"] == yaml.safe_load(VERSIONS_FILE.read_text())["pulumi_workspace"]["image"]


@pytest.mark.parametrize(
    ("memory", "heap"), [(None, 1_207_959_552), ("2Gi", 966_367_641), ("3Gi", 1_449_551_462), ("2500M", 1_125_000_000)]
)
def test_the_go_heap_is_held_to_a_share_of_the_workspace_memory(memory, heap):
    """The workspace's one limit holds the CLI, its plugins and the program: the Go processes' soft
    heap limit is 45 % of it, in bytes, and follows workspaceMemory."""
    m = declare({**RECONCILER, **({"workspaceMemory": memory} if memory else {})})
    workspace = stack_of(m)["spec"]["workspaceTemplate"]["spec"]
    [container_memory] = {workspace["resources"]["requests"]["memory"], workspace["resources"]["limits"]["memory"]}
    assert container_memory == (memory or "2560Mi")
    env = {e["name"]: e["value"] for e in workspace["env"]}
    assert env["GOMEMLIMIT"] == str(heap)


@pytest.mark.tools
def test_the_pinned_cli_starts_with_the_derived_heap_limit():
    """Go refuses a malformed GOMEMLIMIT at start (the Kubernetes form, 2Gi, is one): every Go process
    in the workspace would die. The real pinned CLI starts with what the component derives."""
    from components.workload_reconciler import go_memory_limit
    from greenops.common.toolpaths import tool_path

    def version(limit: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "GOMEMLIMIT": limit}
        return subprocess.run([tool_path("pulumi"), "version"], env=env, capture_output=True, text=True, timeout=60)

    for memory in ("2Gi", "3Gi", "2500M", "1.5Gi"):
        started = version(go_memory_limit(memory))
        assert started.returncode == 0 and started.stdout.startswith("v3."), (memory, started.stderr[:300])
    refused = version("2Gi")
    assert refused.returncode != 0 and "malformed GOMEMLIMIT" in refused.stderr


@pytest.mark.crds
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_object_validates(crd_schemas, variant):
    objs = manifests(declare(VARIANTS[variant]))
    kinds = sorted(o["kind"] for o in objs)
    assert kinds == ["ClusterRoleBinding", "Namespace", "Namespace", "Role", "RoleBinding", "ServiceAccount", "Stack"]
    for o in objs:
        if o["apiVersion"] == "pulumi.com/v1":
            assert crd_schemas.errors(o) == []
            assert len(o["metadata"]["name"]) <= 42  # the CRD's CEL rule, which the JSON schema cannot say
        else:
            assert core_errors(o, f"V1{o['kind']}") == [], o["kind"]


def test_the_strict_checkers_do_catch_mistakes(crd_schemas):
    spec = stack_of(declare(RECONCILER))["spec"]
    bad = {"apiVersion": "pulumi.com/v1", "kind": "Stack", "metadata": {"name": "x"}, "spec": {**spec, "resync": 60}}
    assert any("resync" in e for e in crd_schemas.errors(bad))
    assert core_errors(
        {"apiVersion": "v1", "kind": "RoleBinding", "metadata": {}, "subjects": [{"kind": "User"}]}, "V1RoleBinding"
    ) == [
        "<root>: Invalid value for `role_ref`, must not be `None`",
        "subjects.0.: Invalid value for `name`, must not be `None`",
    ]
    assert core_errors({"metadata": {"nmae": "x"}}, "V1ServiceAccount") == ["metadata.nmae: unknown field"]


def test_resync_follows_the_programs_interval():
    spec = stack_of(declare(RECONCILER, interval=240))["spec"]
    assert spec["resyncFrequencySeconds"] == 240
    assert spec["continueResyncOnCommitMatch"] is True and spec["destroyOnFinalize"] is False
    assert spec["refresh"] is False
    assert stack_of(declare(RECONCILER))["spec"]["resyncFrequencySeconds"] == 300  # existing callers
    with pytest.raises(ValidationError, match="resyncFrequencySeconds"):  # one number: greenops:reconcile
        declare({**RECONCILER, "resyncFrequencySeconds": 600}, interval=240)


def test_an_interval_under_the_operators_minimum_is_refused():
    with pytest.raises(
        pulumi.RunError, match=r"resync of 30 s would run every 60 s.*greenops:reconcile\.intervalSeconds"
    ):
        declare(RECONCILER, interval=30)


def test_git_source():
    spec = stack_of(declare(RECONCILER))["spec"]
    assert (spec["projectRepo"], spec["branch"]) == (GIT["projectRepo"], "main")
    assert not {"commit", "repoDir", "gitAuth", "fluxSource"} & set(spec)
    spec = stack_of(declare(VARIANTS["git-commit+auth"]))["spec"]
    assert spec["commit"] == "0123456789abcdef0123456789abcdef01234567" and "branch" not in spec
    assert spec["repoDir"] == "infra"
    assert spec["gitAuth"] == {
        "sshAuth": {"sshPrivateKey": {"type": "Secret", "secret": {"name": "git-ssh", "key": "sshPrivateKey"}}}
    }


@pytest.mark.parametrize(
    "auth, expected",
    [
        ({"secretName": "git"}, {"accessToken": {"type": "Secret", "secret": {"name": "git", "key": "accessToken"}}}),
        (
            {"secretName": "git", "type": "basic"},
            {
                "basicAuth": {
                    "userName": {"type": "Secret", "secret": {"name": "git", "key": "username"}},
                    "password": {"type": "Secret", "secret": {"name": "git", "key": "password"}},
                }
            },
        ),
    ],
)
def test_git_auth_uses_the_operators_key_names(auth, expected):
    spec = stack_of(declare({**RECONCILER, "git": {**GIT, "gitAuth": auth}}))["spec"]
    assert spec["gitAuth"] == expected


def test_flux_source():
    spec = stack_of(declare(VARIANTS["flux+cloud"]))["spec"]
    assert spec["fluxSource"] == {
        "sourceRef": {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "name": "greenops"},
        "dir": ".",
    }
    assert not {"projectRepo", "branch", "commit", "repoDir", "gitAuth"} & set(spec)


def test_s3_backend():
    spec = stack_of(declare(RECONCILER))["spec"]
    assert spec["backend"] == "s3://greenops-pulumi-state?region=eu-west-1&endpoint=https://s3.example.com"
    assert spec["envRefs"] == {
        "AWS_ACCESS_KEY_ID": {"type": "Secret", "secret": {"name": "pulumi-state-s3", "key": "AWS_ACCESS_KEY_ID"}},
        "AWS_SECRET_ACCESS_KEY": {
            "type": "Secret",
            "secret": {"name": "pulumi-state-s3", "key": "AWS_SECRET_ACCESS_KEY"},
        },
        "PULUMI_CONFIG_PASSPHRASE": {
            "type": "Secret",
            "secret": {"name": "pulumi-config-passphrase", "key": "PULUMI_CONFIG_PASSPHRASE"},
        },
    }
    bare = {**RECONCILER, "backend": {"s3": {"bucket": "state", "region": "us-east-1"}}}
    assert stack_of(declare(bare))["spec"]["backend"] == "s3://state?region=us-east-1"


def test_pulumi_cloud_backend():
    spec = stack_of(declare(VARIANTS["flux+cloud"]))["spec"]
    assert spec["stack"] == "acme/prod-workloads" and spec["backend"] == "https://api.pulumi.com"
    assert spec["envRefs"] == {
        "PULUMI_ACCESS_TOKEN": {"type": "Secret", "secret": {"name": "pulumi-access-token", "key": "accessToken"}}
    }
    assert spec["secretsRef"] == {
        "greenops:kubeconfig": {"type": "Secret", "secret": {"name": "workloads-kubeconfig", "key": "kubeconfig"}}
    }


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_secret_value_in_any_input(variant):
    m = declare({**VARIANTS[variant], "secretEnv": {"AZURE_CLIENT_SECRET": {"name": "azure", "key": "secret"}}})
    ours = [r for r in m.resources if r.name.startswith("pko-")]
    assert not [r for r in ours if r.typ == "kubernetes:core/v1:Secret"]  # names Secrets, never creates one
    assert not [r for r in ours if SECRET_SIG in json.dumps(r.inputs)]  # so nothing secret lands in state
    spec = stack_of(m)["spec"]
    paths = dict(refs(spec))
    assert "envRefs.AZURE_CLIENT_SECRET" in paths
    assert {p: r["type"] for p, r in paths.items() if r["type"] != "Secret" or set(r) != {"type", "secret"}} == {}
    # the operator's deprecated inline forms, which would carry values in the Stack object itself
    assert not {"secrets", "config", "accessTokenSecret", "envSecrets", "gitAuthSecret"} & set(spec)


def test_the_workspace_account_is_least_privilege():
    from greenops.renderers import rendered_kinds

    m = declare(RECONCILER)
    [account] = of(m, "kubernetes:core/v1:ServiceAccount")
    assert stack_of(m)["spec"]["serviceAccountName"] == account.inputs["metadata"]["name"] == "greenops-workloads"
    subject = [{"kind": "ServiceAccount", "name": "greenops-workloads", "namespace": "greenops-reconciler"}]
    [delegator] = of(m, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert delegator.inputs["roleRef"]["name"] == "system:auth-delegator" and delegator.inputs["subjects"] == subject
    assert not of(m, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")  # no cluster-wide grant of our own
    [role] = of(m, "kubernetes:rbac.authorization.k8s.io/v1:Role")
    [binding] = of(m, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    assert role.inputs["metadata"]["namespace"] == binding.inputs["metadata"]["namespace"] == "greenops"
    assert binding.inputs["subjects"] == subject and binding.inputs["roleRef"]["kind"] == "Role"
    groups = {g for rule in role.inputs["rules"] for g in rule["apiGroups"]}
    assert groups == {v.split("/")[0] for v, _ in rendered_kinds()}  # the VM objects' groups, nothing else
    assert "" not in groups  # no core resources: Secrets reach the pod through the kubelet
    flat = json.dumps(role.inputs["rules"])
    assert "*" not in flat and "secrets" not in flat and "escalate" not in flat and "bind" not in flat


def test_the_workloads_namespace_has_one_owner():
    alone = declare(RECONCILER)
    assert sorted(r.inputs["metadata"]["name"] for r in of(alone, "kubernetes:core/v1:Namespace")) == [
        "greenops",
        "greenops-reconciler",
    ]
    shared = declare(RECONCILER, scheduler={"enabled": True})
    owners = [r.name for r in of(shared, "kubernetes:core/v1:Namespace") if r.inputs["metadata"]["name"] == "greenops"]
    assert owners == ["scheduler-ns"]


def test_disabled_by_default():
    assert PlatformConfig().reconciler.enabled is False
    m = collect(OFF, secrets=False)
    assert not [r for r in m.resources if r.name.startswith("pko-") or r.typ == STACK]
    assert "greenops:platform:WorkloadReconciler" not in {r.typ for r in m.resources}


def test_the_prod_stack_reconciles_its_workloads_stack():
    m = collect(stack_platform("prod"))
    spec = stack_of(m)["spec"]
    assert spec["stack"] == "prod-workloads"
    assert spec["projectRepo"] == "https://github.com/example/greenops-platform.git" and spec["branch"] == "main"
    assert (
        spec["backend"].startswith("s3://greenops-pulumi-state?") and spec["resyncFrequencySeconds"] == 240
    )  # the stack's reconcile interval
    assert set(spec["envRefs"]) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "PULUMI_CONFIG_PASSPHRASE"}
    # after the control plane the workloads stack calls; in mocks, dependencies are not recorded,
    # so check the order of registration instead
    names = [r.name for r in m.resources]
    assert names.index("pko-stack") > max(names.index(n) for n in ("opa-opa", "scheduler-deploy", "aso-aso"))


@pytest.mark.parametrize(
    "reconciler, message",
    [
        ({**RECONCILER, "git": None}, r"greenops:platform\.reconciler: set exactly one of git, fluxSource"),
        (
            {**RECONCILER, "fluxSource": {"name": "greenops"}},
            r"greenops:platform\.reconciler: set exactly one of git, fluxSource",
        ),
        (
            {"enabled": True, "git": GIT},
            r"greenops:platform\.reconciler: required when reconciler is enabled: stack, backend",
        ),
        (
            {**RECONCILER, "git": {**GIT, "commit": "abc"}},
            r"greenops:platform\.reconciler\.git: set exactly one of branch, commit",
        ),
        (
            {**RECONCILER, "backend": {**S3, "pulumiCloud": {}}},
            r"greenops:platform\.reconciler\.backend: set exactly one of s3, pulumiCloud",
        ),
        (
            {**RECONCILER, "backend": {"s3": {"bucket": "b"}}},
            r"greenops:platform\.reconciler\.backend\.s3\.region: Field required",
        ),
        (
            {**RECONCILER, "resyncFrequencySeconds": 300},
            r"greenops:platform\.reconciler\.resyncFrequencySeconds: Extra inputs are not permitted",
        ),
        (
            {**RECONCILER, "secretEnv": {"PULUMI_CONFIG_PASSPHRASE": {"name": "p", "key": "k"}}},
            r"greenops:platform\.reconciler: secretEnv: PULUMI_CONFIG_PASSPHRASE already set from backend",
        ),
        (
            {**RECONCILER, "stackNamespace": "greenops"},
            r"greenops:platform\.reconciler: stackNamespace: must differ from namespace and workloadsNamespace",
        ),
        (
            {**RECONCILER, "passphrase": "hunter2"},
            r"greenops:platform\.reconciler\.passphrase: Extra inputs are not permitted",
        ),
        ({**RECONCILER, "stack": "prod"}, r"greenops:platform\.reconciler\.stack: 'prod' is this stack"),
        (
            {**RECONCILER, "workspaceMemory": "2GB"},
            r"greenops:platform\.reconciler\.workspaceMemory: '2GB' is not a Kubernetes quantity \(e\.g\. 2Gi",
        ),
        (
            {**RECONCILER, "secretEnv": {"GOMEMLIMIT": {"name": "m", "key": "k"}}},
            r"greenops:platform\.reconciler: secretEnv: GOMEMLIMIT set by the workspace itself",
        ),
        (
            {**RECONCILER, "workspaceMemory": "500m"},
            r"greenops:platform\.reconciler\.workspaceMemory: '500m' is under 1Gi",
        ),
    ],
)
def test_bad_config_is_refused_by_key(reconciler, message):
    run_platform({**OFF, "reconciler": {k: v for k, v in reconciler.items() if v is not None}}, secrets=False)
    from greenops.stack import program

    with pytest.raises(pulumi.RunError, match=message):
        program.run()


def test_one_stack_per_shard_each_on_its_shard_stack(crd_schemas):
    m = declare({**RECONCILER, "shards": 3})
    stacks = {r.inputs["metadata"]["name"]: r.inputs for r in of(m, STACK)}
    assert {n: s["spec"]["stack"] for n, s in stacks.items()} == {
        f"greenops-workloads-shard-{i}": f"prod-workloads-shard-{i}" for i in range(3)
    }
    # the same timer, identity and source for every shard
    specs = [{k: v for k, v in s["spec"].items() if k != "stack"} for s in stacks.values()]
    assert all(spec == specs[0] for spec in specs)
    assert all(crd_schemas.errors({"apiVersion": "pulumi.com/v1", "kind": "Stack", **s}) == [] for s in stacks.values())
