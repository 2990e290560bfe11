"""Controller: the cluster path's controller (``python -m greenops.controller``) as a Deployment
beside the scheduler, in its namespace.

Every replica runs for one Lease; the leader follows the VmTemplates of every namespace, reads the
VM objects their chart renders, writes a VmTemplate's ``spec.render`` to make Krateo render it again
at its gate, shows its phase and place on a VmPlacement of the same name, and confirms, reports and
releases the reservations admission booked. Its identity is its ServiceAccount twice over: the
pod's token for the API server, and a second projected token bound to the scheduler's audience,
which the scheduler reviews (TokenReview) and maps to a principal with the ``report`` role on the
cluster path, for every tenant (components/scheduler.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.hardening import (
    Resources,
    container_security_context,
    digest_skips,
    pod_security_context,
    pull_policy,
    scanner_skips,
    scratch,
)
from components.platform_config import ControllerConfig, PlatformConfig, ServiceAccountPrincipal
from greenops.charts.vmplacement import GROUP as PLACEMENT_GROUP
from greenops.charts.vmplacement import PLURAL as PLACEMENT_PLURAL
from greenops.charts.vmplacement import placement_crd
from greenops.identity.kubernetes import AUDIENCE
from greenops.policies.webhook import VMTEMPLATE_GROUP, VMTEMPLATE_RESOURCE
from greenops.renderers import rendered_resources

SERVICE_ACCOUNT = "greenops-controller"
LEASE = "greenops-controller"  # --lease-name, and the one Lease its Role may read and renew
LABELS = {"app.kubernetes.io/name": "greenops-controller", "app.kubernetes.io/part-of": "greenops"}
TOKEN_DIR = "/var/run/secrets/greenops/scheduler"  # the projected token it presents to the scheduler
TOKEN_SECONDS = 3600  # the kubelet rotates the token at 80% of this; the controller re-reads it at each call
TALKS_TO_THE_API_SERVER = "the controller lists and watches VmTemplates and holds its Lease with the pod's token"
UNPROBED = (
    "the controller serves only its metrics, which answer whether or not it works; a replica that stops "
    "renewing its Lease stops acting within the renew deadline and another takes over"
)
METRICS_PORT = 8080  # /metrics (greenops.controller.metrics), the containerPort named "metrics"


@dataclass
class ControllerArgs:
    config: ControllerConfig
    namespace: str  # the scheduler's: the Lease lives there, beside the record it follows
    image: str  # the scheduler's image, which holds the whole greenops package
    scheduler_url: str
    # the scheduler (whose component declares the namespace), and whatever else must be there first
    after: list[pulumi.Resource] = field(default_factory=list)


def principal(namespace: str) -> ServiceAccountPrincipal:
    """The controller at the scheduler: it confirms, reports and releases cluster-path reservations of
    every tenant (a VmTemplate's namespace says whose), and never books one (role report)."""
    return ServiceAccountPrincipal(
        service_account=f"{namespace}/{SERVICE_ACCOUNT}", role="report", tenants=None, paths=["cluster"]
    )


def scheduler_principals(c: PlatformConfig) -> list[ServiceAccountPrincipal]:
    """The platform's own ServiceAccounts the scheduler accepts, besides those the stack declares
    (the controller is on only with the scheduler: PlatformConfig)."""
    return [principal(c.scheduler.namespace)] if c.controller.enabled else []


def cluster_rules() -> list[k8s.rbac.v1.PolicyRuleArgs]:
    """Least privilege, cluster-wide (VmTemplates live in every tenant's namespace): follow
    VmTemplates and write their ``spec.render``; read the objects their chart renders, exactly the
    renderers' kinds; tell each VmTemplate's phase changes as Events (create only); show its phase and
    place on a VmPlacement (create it, replace one a former VmTemplate of that name left, write its
    status subresource; greenops.controller.placement_status); create a VmTemplate's run report
    Secret at its gate (greenops.controller.run_report)."""
    return [
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=[VMTEMPLATE_GROUP], resources=[VMTEMPLATE_RESOURCE], verbs=["get", "list", "watch", "patch"]
        ),
        *(
            k8s.rbac.v1.PolicyRuleArgs(api_groups=[group], resources=resources, verbs=["get", "list"])
            for group, resources in rendered_resources().items()
        ),
        k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["events"], verbs=["create"]),
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=[PLACEMENT_GROUP], resources=[PLACEMENT_PLURAL], verbs=["get", "create", "delete"]
        ),
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=[PLACEMENT_GROUP], resources=[f"{PLACEMENT_PLURAL}/status"], verbs=["patch"]
        ),
        # a VmTemplate's run report (greenops.controller.run_report): created once, never read,
        # changed or deleted (its owner, the VmTemplate, takes it along)
        k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["secrets"], verbs=["create"]),
    ]


def lease_rules() -> list[k8s.rbac.v1.PolicyRuleArgs]:
    """Its own namespace: read and renew its one Lease; create it the first time (RBAC cannot limit
    create by name: the object does not exist yet)."""
    return [
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=["coordination.k8s.io"], resources=["leases"], resource_names=[LEASE], verbs=["get", "update"]
        ),
        k8s.rbac.v1.PolicyRuleArgs(api_groups=["coordination.k8s.io"], resources=["leases"], verbs=["create"]),
    ]


def _field_env(name: str, path: str) -> k8s.core.v1.EnvVarArgs:
    return k8s.core.v1.EnvVarArgs(
        name=name,
        value_from=k8s.core.v1.EnvVarSourceArgs(field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path=path)),
    )


def controller_container(args: ControllerArgs, mounts: list[k8s.core.v1.VolumeMountArgs]) -> k8s.core.v1.ContainerArgs:
    c = args.config
    return k8s.core.v1.ContainerArgs(
        name="controller",
        image=args.image,
        image_pull_policy=pull_policy(args.image),
        command=["python", "-m", "greenops.controller"],
        args=[
            "--scheduler-url",
            args.scheduler_url,
            "--token-file",
            f"{TOKEN_DIR}/token",
            # the Lease's namespace is the pod's own (POD_NAMESPACE), where its Role is
            "--lease-name",
            LEASE,
            "--identity",
            "$(POD_NAME)",  # expanded by the kubelet: the Lease names the pod that holds it
            "--lease-seconds",
            str(c.lease_seconds),
            # two thirds of the Lease, as client-go's defaults (15 s, 10 s): a leader steps down
            # before anyone else may take over
            "--renew-deadline",
            f"{c.lease_seconds * 2 / 3:g}",
            "--sweep-seconds",
            str(c.sweep_seconds),
            "--resync-seconds",
            str(c.resync_seconds),
            "--readiness",
            c.readiness,
            *(["--completion-url", c.completion_url] if c.completion_url else []),
            "--metrics-port",
            str(METRICS_PORT),
            "--metrics-address",
            "0.0.0.0",  # the pod's address, where Prometheus scrapes it
        ],
        env=[_field_env("POD_NAMESPACE", "metadata.namespace"), _field_env("POD_NAME", "metadata.name")],
        ports=[k8s.core.v1.ContainerPortArgs(name="metrics", container_port=METRICS_PORT)],
        volume_mounts=mounts,
        resources=Resources(c.cpu, c.memory, c.cpu_limit).args(),
        security_context=container_security_context(),
    )


class Controller(pulumi.ComponentResource):
    def __init__(self, name: str, args: ControllerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:Controller", name, None, opts)
        ns = args.namespace
        after = pulumi.ResourceOptions(parent=self, depends_on=args.after)
        subject = [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SERVICE_ACCOUNT, namespace=ns)]
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=SERVICE_ACCOUNT, namespace=ns, labels=LABELS),
            opts=after,
        )
        # One CRD per cluster, whichever platform came first: server-side apply makes a second
        # platform's create an update, and it is kept when a platform is destroyed (deleting a CRD
        # deletes every object of it, the other platform's too)
        crd = placement_crd()
        self.placement_crd = k8s.apiextensions.v1.CustomResourceDefinition(
            f"{name}-placements",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=crd["metadata"]["name"], labels=LABELS),
            spec=crd["spec"],
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )
        # cluster-scoped names carry the namespace, as the scheduler's binding does: two platforms in
        # one cluster (staging beside prod) do not overwrite each other's
        cluster_name = f"{SERVICE_ACCOUNT}-{ns}"
        self.cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-follow",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=cluster_name, labels=LABELS),
            rules=cluster_rules(),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.cluster_role_binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-follow",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=cluster_name, labels=LABELS),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=cluster_name
            ),
            subjects=subject,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.cluster_role]),
        )
        self.role = k8s.rbac.v1.Role(
            f"{name}-lease",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{SERVICE_ACCOUNT}-lease", namespace=ns, labels=LABELS),
            rules=lease_rules(),
            opts=after,
        )
        self.role_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-lease",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{SERVICE_ACCOUNT}-lease", namespace=ns, labels=LABELS),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name=f"{SERVICE_ACCOUNT}-lease"
            ),
            subjects=subject,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.after, self.role]),
        )
        # the root filesystem is read-only: Python's temporary files go here
        tmp_volume, tmp_mount = scratch("tmp", "/tmp")
        token_volume = k8s.core.v1.VolumeArgs(
            name="scheduler-token",
            projected=k8s.core.v1.ProjectedVolumeSourceArgs(
                sources=[
                    k8s.core.v1.VolumeProjectionArgs(
                        service_account_token=k8s.core.v1.ServiceAccountTokenProjectionArgs(
                            audience=AUDIENCE, expiration_seconds=TOKEN_SECONDS, path="token"
                        )
                    )
                ]
            ),
        )
        token_mount = k8s.core.v1.VolumeMountArgs(name="scheduler-token", mount_path=TOKEN_DIR, read_only=True)
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deploy",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=SERVICE_ACCOUNT,
                namespace=ns,
                labels=LABELS,
                annotations=scanner_skips(
                    {
                        "CKV_K8S_38": TALKS_TO_THE_API_SERVER,
                        "CKV_K8S_8": UNPROBED,
                        "CKV_K8S_9": UNPROBED,
                        **digest_skips(args.image),
                    }
                ),
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=args.config.replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=LABELS),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=LABELS),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=SERVICE_ACCOUNT,
                        # the kube client's credential: the controller calls the API server
                        automount_service_account_token=True,
                        security_context=pod_security_context(),
                        containers=[controller_container(args, [tmp_mount, token_mount])],
                        volumes=[tmp_volume, token_volume],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[
                    *args.after,
                    self.service_account,
                    self.cluster_role_binding,
                    self.role_binding,
                    self.placement_crd,
                ],
            ),
        )
        self.register_outputs({"serviceAccount": f"{ns}/{SERVICE_ACCOUNT}", "replicas": args.config.replicas})
