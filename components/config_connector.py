"""ConfigConnector: GCP Config Connector (cluster mode) and the Google service account it runs as."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.operator_bundle import operator_manifest
from components.pins import OperatorBundlePin
from components.platform_config import GcpConfig

KSA = "cnrm-system/cnrm-controller-manager"
# Least privilege for the minimum set (greenops/renderers/providers/gcp.py: ComputeNetwork,
# ComputeSubnetwork, ComputeInstance): instances, and networks with their subnetworks. Never Owner,
# Editor or compute.admin (which also covers firewalls, images, disks' IAM...). The renderer's
# instances name no service account, so iam.serviceAccountUser is not needed either.
ROLES = ("roles/compute.instanceAdmin.v1", "roles/compute.networkAdmin")


@dataclass
class ConfigConnectorArgs:
    config: GcpConfig
    bundle: OperatorBundlePin  # components/versions.yaml config_connector


class ConfigConnector(pulumi.ComponentResource):
    def __init__(self, name: str, args: ConfigConnectorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:ConfigConnector", name, None, opts)
        project = args.config.project
        child = pulumi.ResourceOptions(parent=self)
        self.account = gcp.serviceaccount.Account(
            f"{name}-sa",
            account_id="greenops-config-connector",
            project=project,
            display_name="GreenOps Config Connector",
            opts=child,
        )
        member = self.account.email.apply(lambda e: f"serviceAccount:{e}")
        self.roles = [
            gcp.projects.IAMMember(
                f"{name}-{role.split('/')[1].replace('.', '-')}", project=project, role=role, member=member, opts=child
            )
            for role in ROLES
        ]
        self.workload_identity = gcp.serviceaccount.IAMMember(
            f"{name}-workload-identity",
            service_account_id=self.account.name,
            role="roles/iam.workloadIdentityUser",
            member=f"serviceAccount:{project}.svc.id.goog[{KSA}]",
            opts=child,
        )
        # The operator ships only inside Google's release-bundle.tar.gz (no chart; no plain-YAML asset,
        # and GitHub releases carry source only), which yaml.v2.ConfigFile cannot read: the program
        # fetches the pinned archive, verifies its pinned sha256, and applies the one manifest in it
        # that upstream's manual install applies (operator-system/configconnector-operator.yaml).
        self.operator = k8s.yaml.v2.ConfigGroup(
            f"{name}-operator", yaml=operator_manifest(args.bundle), opts=pulumi.ResourceOptions(parent=self)
        )
        self.context = k8s.apiextensions.CustomResource(
            f"{name}-config",
            api_version="core.cnrm.cloud.google.com/v1beta1",
            kind="ConfigConnector",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="configconnector.core.cnrm.cloud.google.com"),
            spec={"mode": "cluster", "googleServiceAccount": self.account.email},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.operator, self.workload_identity, *self.roles]),
        )
        self.register_outputs({"serviceAccount": self.account.email})
