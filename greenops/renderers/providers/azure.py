"""Azure Service Operator v2: VirtualNetwork, subnet, NIC and VirtualMachine (thesis §3.4.1).

Every object sits in the stack's resource group, named by ARM id (``owner.armId``, as the thesis
does): the group is created by pulumi-azure-native (components/azure_operator.py), so there is no
``resources.azure.com`` ResourceGroup object in the namespace for an ``owner.name`` to point at. The
subnet's owner is our own VirtualNetwork, so it stays a reference by name.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from greenops.common.errors import RenderError
from greenops.renderers.base import (
    AZURE_RESOURCE_GROUP_PATTERN,
    AZURE_SUBSCRIPTION_ID_PATTERN,
    ObjectState,
    RenderContext,
    condition,
    describe,
    readiness,
)
from greenops.renderers.registry import renderer

NETWORK_API = "network.azure.com/v1api20240301"
COMPUTE_API = "compute.azure.com/v1api20220301"  # the version the thesis templates use
VNET_CIDR = "10.0.0.0/16"
SUBNET_CIDR = "10.0.0.0/24"
RESOURCE_GROUP_ID = "/subscriptions/%s/resourceGroups/%s"  # printf-style: the chart formats it too

# The chart (components/charts/vm-template) reads these through its generated catalog.
CHART_CONSTANTS = {
    "networkApi": NETWORK_API,
    "computeApi": COMPUTE_API,
    "vnetCidr": VNET_CIDR,
    "subnetCidr": SUBNET_CIDR,
    "resourceGroupId": RESOURCE_GROUP_ID,
    "subscriptionIdPattern": AZURE_SUBSCRIPTION_ID_PATTERN,
    "resourceGroupPattern": AZURE_RESOURCE_GROUP_PATTERN,
}


def image_reference(urn: str, workload: str) -> dict[str, Any]:
    """An Azure image URN as a VM's imageReference: ASO's objects and direct mode's alike."""
    parts = urn.split(":")
    if len(parts) != 4:
        raise RenderError(f"workload {workload!r}: Azure image {urn!r} is not a publisher:offer:sku:version URN")
    publisher, offer, sku, version = parts
    return {"publisher": publisher, "offer": offer, "sku": sku, "version": version}


def state(obj: dict[str, Any]) -> ObjectState:
    """ASO v2 reports one ``Ready`` condition; when it is not True, severity ``Error`` means the
    operator has given up until the object is changed, ``Warning``/``Info`` that it keeps trying."""
    ready = condition(obj, "Ready")
    if ready is not None and ready.get("status") == "False" and ready.get("severity") == "Error":
        return ObjectState(False, failure=describe(ready), detail=describe(ready))
    return replace(readiness(ready), stopped=_powered_off(obj))


def _powered_off(obj: dict[str, Any]) -> bool:
    """A VM's instance view says ``PowerState/stopped`` (or deallocated) once it has shut down."""
    statuses = (((obj.get("status") or {}).get("instanceView") or {}).get("statuses")) or []
    return any(isinstance(s, dict) and s.get("code") in POWERED_OFF for s in statuses)


# Azure's power states of a VM that has shut down (deallocated: stopped and its compute released)
POWERED_OFF = {"PowerState/stopped", "PowerState/deallocated"}


@renderer(
    "azure",
    kinds=[
        (NETWORK_API, "VirtualNetwork"),
        (NETWORK_API, "VirtualNetworksSubnet"),
        (NETWORK_API, "NetworkInterface"),
        (COMPUTE_API, "VirtualMachine"),
    ],
    vm_kind="VirtualMachine",
    state=state,
)
def render(ctx: RenderContext) -> list[dict[str, Any]]:
    d, s = ctx.decision, ctx.settings
    if not s.ssh_public_key:
        raise RenderError(
            f"workload {ctx.workload.name!r}: Azure Linux VMs need an SSH public key; set sshPublicKey in the render "
            "settings"
        )
    if not s.azure_subscription_id:
        raise RenderError(
            f"workload {ctx.workload.name!r}: Azure objects are owned by resource group {s.azure_resource_group!r} "
            f"through its ARM id, which needs its subscription; set azureSubscriptionId in the render settings"
        )
    owner = {"armId": RESOURCE_GROUP_ID % (s.azure_subscription_id, s.azure_resource_group)}
    vnet, subnet, nic, vm = ctx.name("vnet"), ctx.name("subnet"), ctx.name("nic"), ctx.name()
    return [
        {
            "apiVersion": NETWORK_API,
            "kind": "VirtualNetwork",
            "metadata": ctx.metadata(vnet),
            "spec": {
                "owner": owner,
                "location": d.region,  # [1] scheduling region
                "addressSpace": {"addressPrefixes": [VNET_CIDR]},
                "tags": ctx.tags(),
            },
        },
        {
            "apiVersion": NETWORK_API,
            "kind": "VirtualNetworksSubnet",
            "metadata": ctx.metadata(subnet),
            "spec": {"owner": {"name": vnet}, "addressPrefix": SUBNET_CIDR},
        },
        {
            "apiVersion": NETWORK_API,
            "kind": "NetworkInterface",
            "metadata": ctx.metadata(nic),
            "spec": {
                "owner": owner,
                "location": d.region,
                "ipConfigurations": [
                    {
                        "name": "primary",
                        "privateIPAllocationMethod": "Dynamic",
                        "subnet": {
                            "reference": {"group": "network.azure.com", "kind": "VirtualNetworksSubnet", "name": subnet}
                        },
                    }
                ],
                "tags": ctx.tags(),
            },
        },
        {
            "apiVersion": COMPUTE_API,
            "kind": "VirtualMachine",
            "metadata": ctx.metadata(vm),
            "spec": {
                "owner": owner,
                "location": d.region,  # [1]
                "hardwareProfile": {"vmSize": d.vm_size},  # [2] VM size
                "storageProfile": {"imageReference": image_reference(d.image, ctx.workload.name)},  # [3] OS
                "osProfile": {
                    **({"customData": custom} if (custom := ctx.user_data(base64=True)) else {}),
                    "computerName": vm,
                    "adminUsername": s.admin_username,
                    "linuxConfiguration": {
                        "disablePasswordAuthentication": True,
                        "ssh": {
                            "publicKeys": [
                                {
                                    "path": f"/home/{s.admin_username}/.ssh/authorized_keys",
                                    "keyData": s.ssh_public_key,
                                }
                            ]
                        },
                    },
                },
                "networkProfile": {
                    "networkInterfaces": [
                        {
                            "reference": {"group": "network.azure.com", "kind": "NetworkInterface", "name": nic},
                        }
                    ]
                },
                "tags": ctx.tags(),
            },
        },
    ]
