"""WorkloadReconciler: the Pulumi Kubernetes Operator (v2) and one Stack that re-runs ``up`` of the
workloads stack on a timer, so time gates open in the cluster with nobody running
``greenops reconcile``.

No secret value passes through Pulumi here: the Stack names Secrets that already exist in its
namespace (git credentials, state backend, passphrase, secret config) and the operator hands them
to the workspace pod as secretKeyRefs and secret volumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import pulumi
import pulumi_kubernetes as k8s
from kubernetes.utils.quantity import parse_quantity

from components.hardening import image_fields
from components.helm import release
from components.pins import ChartPin, WorkspacePin
from components.platform_config import WORKSPACE_ENV, GitAuthConfig, ReconcilerConfig, SecretKeyRef
from greenops.common.shard_names import shard_stack
from greenops.renderers import rendered_resources

ACCOUNT = "greenops-workloads"  # the workspace's ServiceAccount, its RBAC and the Stack share this name
MIN_RESYNC_SECONDS = 60  # the operator runs anything shorter every 60 s
APPLY_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
# The workspace pod's one memory limit holds the pulumi CLI, its plugins and the Python program. At
# 1000 workloads per stack they peak at about 2250 MiB together (docs/operations/scale.md), most of
# the CLI's share being heap Go lets grow between collections. A soft limit on every Go process's heap
# (GOMEMLIMIT: the CLI, the plugins, the operator's agent) makes the CLI collect sooner, so the pod
# keeps its headroom rather than the kernel killing a pass; past the limit Go collects more often,
# which is slower but not an error in itself.
GO_HEAP_SHARE = Decimal("0.45")


def go_memory_limit(workspace_memory: str) -> str:
    """GOMEMLIMIT for a workspace of this memory: bytes, as Go reads the variable."""
    return str(int(parse_quantity(workspace_memory) * GO_HEAP_SHARE))


@dataclass
class WorkloadReconcilerArgs:
    config: ReconcilerConfig
    chart: ChartPin
    workspace: WorkspacePin  # what the workspace pod runs the program with
    resync_frequency_seconds: int
    # The workloads namespace when another part declares it (the scheduler); otherwise declared here.
    workloads_namespace: k8s.core.v1.Namespace | None = None
    # The control plane the workloads stack calls (OPA, the scheduler, the cloud operators).
    after: list[pulumi.Resource] = field(default_factory=list)


def secret_ref(ref: SecretKeyRef) -> dict:
    return {"type": "Secret", "secret": {"name": ref.name, "key": ref.key}}


def git_auth(auth: GitAuthConfig) -> dict:
    """The keys the operator itself expects in a git credentials Secret (those of gitAuthSecret)."""

    def key(k: str) -> dict:
        return secret_ref(SecretKeyRef(name=auth.secret_name, key=k))

    if auth.type == "ssh":
        return {"sshAuth": {"sshPrivateKey": key("sshPrivateKey")}}
    if auth.type == "basic":
        return {"basicAuth": {"userName": key("username"), "password": key("password")}}
    return {"accessToken": key("accessToken")}


def program_source(c: ReconcilerConfig) -> dict:
    """Where the workspace fetches the program: a git repository or a Flux source (config allows one)."""
    if c.flux_source:
        f = c.flux_source
        ref = {"sourceRef": {"apiVersion": f.api_version, "kind": f.kind, "name": f.name}}
        return {"fluxSource": {**ref, **({"dir": f.dir} if f.dir else {})}}
    g = c.git
    spec = {"projectRepo": g.project_repo, **({"branch": g.branch} if g.branch else {"commit": g.commit})}
    if g.repo_dir:
        spec["repoDir"] = g.repo_dir
    if g.git_auth:
        spec["gitAuth"] = git_auth(g.git_auth)
    return spec


def workload_rules() -> list[k8s.rbac.v1.PolicyRuleArgs]:
    """Exactly the kinds the renderers emit (ASO, Config Connector, ACK), one rule per API group."""
    return [
        k8s.rbac.v1.PolicyRuleArgs(api_groups=[g], resources=r, verbs=APPLY_VERBS)
        for g, r in rendered_resources().items()
    ]


def stack_spec(
    c: ReconcilerConfig, resync_frequency_seconds: int, workspace: WorkspacePin, stack: str | None = None
) -> dict:
    return {
        "stack": stack or c.stack,
        "serviceAccountName": ACCOUNT,
        **program_source(c),
        "backend": c.backend.url,  # the operator sets PULUMI_BACKEND_URL from it
        "envRefs": {k: secret_ref(v) for k, v in sorted({**c.backend.env(), **c.secret_env}.items())},
        **({"secretsRef": {k: secret_ref(v) for k, v in sorted(c.secret_config.items())}} if c.secret_config else {}),
        # Re-run `up` on a timer even when the commit is unchanged: the clock opens the gates, not git.
        "resyncFrequencySeconds": resync_frequency_seconds,
        "continueResyncOnCommitMatch": True,
        "refresh": c.refresh,
        # Deleting the Stack object (or this component) must never delete the workloads' VMs.
        "destroyOnFinalize": False,
        # Keep the workspace pod between runs: its venv (the project's requirements) is reused.
        "workspaceReclaimPolicy": "Retain",
        "workspaceTemplate": {
            "spec": {
                # the operator's own hardening: Pod Security Standard restricted (non-root, seccomp
                # RuntimeDefault, no escalation, capabilities dropped) for the workspace pod, under the
                # image's own non-root user, whose home holds the project's virtualenv
                "securityProfile": "restricted",
                **image_fields(workspace.image),
                "env": [
                    {"name": name, "value": value}
                    for name, value in zip(
                        WORKSPACE_ENV, (workspace.python, go_memory_limit(c.workspace_memory)), strict=True
                    )
                ],
                "resources": {
                    "requests": {"cpu": c.workspace_cpu, "memory": c.workspace_memory},
                    "limits": {"cpu": c.workspace_cpu_limit, "memory": c.workspace_memory},
                },
            }
        },
    }


class WorkloadReconciler(pulumi.ComponentResource):
    def __init__(self, name: str, args: WorkloadReconcilerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:WorkloadReconciler", name, None, opts)
        c = args.config
        if args.resync_frequency_seconds < MIN_RESYNC_SECONDS:
            raise pulumi.RunError(
                f"greenops:platform.reconciler: a resync of {args.resync_frequency_seconds} s would run every "
                f"{MIN_RESYNC_SECONDS} s (the operator's minimum), later than the time gates' lead assumes; "
                f"set greenops:reconcile.intervalSeconds to at least {MIN_RESYNC_SECONDS}"
            )
        if c.stack.split("/")[-1] == pulumi.get_stack():
            # This stack installs the operator: reconciling it in the cluster would re-run the platform
            # (with the workspace's narrow RBAC) and let the operator manage itself.
            raise pulumi.RunError(
                f"greenops:platform.reconciler.stack: {c.stack!r} is this stack; name the workloads-only stack instead"
            )
        child = pulumi.ResourceOptions(parent=self)

        self.operator = release(
            f"{name}-operator", args.chart, c.namespace, {"controller": {"logFormat": "json"}}, self
        )
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name=c.stack_namespace), opts=child
        )
        workloads_ns = args.workloads_namespace or k8s.core.v1.Namespace(
            f"{name}-workloads-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name=c.workloads_namespace), opts=child
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        in_workloads_ns = pulumi.ResourceOptions(parent=self, depends_on=[workloads_ns])
        subject = [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=ACCOUNT, namespace=c.stack_namespace)]

        self.account = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata=k8s.meta.v1.ObjectMetaArgs(name=ACCOUNT, namespace=c.stack_namespace), opts=in_ns
        )
        # The workspace's agent authenticates the operator's calls with TokenReview/SubjectAccessReview.
        self.auth_delegator = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-auth-delegator",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{ACCOUNT}:system:auth-delegator"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="system:auth-delegator"
            ),
            subjects=subject,
            opts=child,
        )
        # Least privilege: the workloads stack applies, reads back and deletes the VM objects in one
        # namespace. Its Secrets reach the pod through the kubelet, so the account reads none.
        self.role = k8s.rbac.v1.Role(
            f"{name}-apply",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{ACCOUNT}-apply", namespace=c.workloads_namespace),
            rules=workload_rules(),
            opts=in_workloads_ns,
        )
        self.role_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-apply",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{ACCOUNT}-apply", namespace=c.workloads_namespace),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name=f"{ACCOUNT}-apply"
            ),
            subjects=subject,
            opts=in_workloads_ns,
        )

        # After the operator: on destroy the Stack goes first, while the operator can still clear its finalizer.
        # One Stack per shard (greenops/engine/shards.py), each reconciling its own shard stack on the same timer.
        # Unsharded, the Stack keeps the names it always had: (resource name, object name, stack).
        targets = (
            [(f"{name}-stack", ACCOUNT, c.stack)]
            if c.shards == 1
            else [(f"{name}-stack-{i}", f"{ACCOUNT}-shard-{i}", shard_stack(c.stack, i)) for i in range(c.shards)]
        )
        self.stacks = [
            k8s.apiextensions.CustomResource(
                resource_name,
                api_version="pulumi.com/v1",
                kind="Stack",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=object_name, namespace=c.stack_namespace),
                spec=stack_spec(c, args.resync_frequency_seconds, args.workspace, stack),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[self.operator, self.account, self.auth_delegator, self.role_binding, *args.after],
                ),
            )
            for resource_name, object_name, stack in targets
        ]
        self.stack = self.stacks[0]
        self.register_outputs(
            {
                "stack": c.stack,
                "shards": c.shards,
                "namespace": c.stack_namespace,
                "resyncFrequencySeconds": args.resync_frequency_seconds,
            }
        )
