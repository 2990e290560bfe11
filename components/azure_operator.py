"""AzureServiceOperator: ASO v2 plus the Azure identity it runs as (workload identity)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_azure_native as azure
import pulumi_kubernetes as k8s

from components.helm import release
from components.pins import ChartPin
from components.platform_config import AzureConfig

NAMESPACE = "azureserviceoperator-system"
SERVICE_ACCOUNT = "azureserviceoperator-default"
# Only the groups the renderers emit: ASO installs no other CRD.
CRD_PATTERN = "resources.azure.com/*;network.azure.com/*;compute.azure.com/*"
# Built-in Azure role definition ids, granted on the workloads' resource group only (never the
# subscription): what the renderer's objects need (greenops/renderers/providers/azure.py: a
# VirtualNetwork and its subnet, a NetworkInterface, a VirtualMachine, all in that group). Both
# include reading the group itself; neither can create another group, assign roles or touch storage
# accounts, key vaults or anything else the broad Contributor role would allow.
ROLES = {
    "vm-contributor": "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",  # Virtual Machine Contributor
    "network-contributor": "4d97b98b-1d4f-4787-a291-c67834d212e7",  # Network Contributor
}


@dataclass
class AzureServiceOperatorArgs:
    config: AzureConfig
    chart: ChartPin
    # what the release waits for: cert-manager (the chart's Issuer and Certificate for its webhooks)
    after: list[pulumi.Resource] = field(default_factory=list)


class AzureServiceOperator(pulumi.ComponentResource):
    def __init__(self, name: str, args: AzureServiceOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:AzureServiceOperator", name, None, opts)
        c = args.config
        child = pulumi.ResourceOptions(parent=self)
        self.resource_group = azure.resources.ResourceGroup(
            f"{name}-workloads", resource_group_name=c.resource_group, location=c.location, opts=child
        )
        self.identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-identity", resource_group_name=self.resource_group.name, location=c.location, opts=child
        )
        self.federated = azure.managedidentity.FederatedIdentityCredential(
            f"{name}-federated",
            resource_group_name=self.resource_group.name,
            resource_name_=self.identity.name,
            issuer=c.oidc_issuer_url,
            subject=f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}",
            audiences=["api://AzureADTokenExchange"],
            opts=child,
        )
        self.roles = [
            azure.authorization.RoleAssignment(
                f"{name}-{label}",
                principal_id=self.identity.principal_id,
                principal_type="ServicePrincipal",
                role_definition_id=f"/subscriptions/{c.subscription_id}/providers/Microsoft.Authorization/roleDefinitions/{role}",
                scope=self.resource_group.id,
                opts=child,
            )
            for label, role in ROLES.items()
        ]
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name=NAMESPACE), opts=child
        )
        self.settings = k8s.core.v1.Secret(
            f"{name}-settings",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="aso-controller-settings", namespace=NAMESPACE),
            string_data={
                "AZURE_SUBSCRIPTION_ID": c.subscription_id,
                "AZURE_TENANT_ID": c.tenant_id,
                "AZURE_CLIENT_ID": self.identity.client_id,
                "USE_WORKLOAD_IDENTITY_AUTH": "true",
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace]),
        )
        self.operator = release(
            f"{name}-aso",
            args.chart,
            NAMESPACE,
            {"crdPattern": CRD_PATTERN},
            self,
            depends_on=[self.settings, *self.roles, *args.after],
        )
        self.register_outputs({"clientId": self.identity.client_id, "resourceGroup": self.resource_group.name})
