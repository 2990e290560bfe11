"""GCP Config Connector: ComputeNetwork, ComputeSubnetwork and ComputeInstance (thesis §3.4.2)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from greenops.common.errors import RenderError
from greenops.renderers.base import ObjectState, RenderContext, condition, readiness
from greenops.renderers.registry import renderer

API = "compute.cnrm.cloud.google.com/v1beta1"
SUBNET_CIDR = "10.10.0.0/24"
BOOT_DISK_GB = 20
BOOT_DISK_TYPE = "pd-balanced"

# The chart (components/charts/vm-template) reads these through its generated catalog.
CHART_CONSTANTS = {"api": API, "subnetCidr": SUBNET_CIDR, "bootDiskGb": BOOT_DISK_GB, "bootDiskType": BOOT_DISK_TYPE}


def workload_labels(ctx: RenderContext) -> dict[str, str]:
    """The GCP labels of a workload's resources: Config Connector's objects and direct mode's alike."""
    # KCC copies metadata.labels to the GCP resource, where keys cannot contain '.' or '/'.
    return {k.replace("greenops.io/", "greenops-"): v.lower() for k, v in ctx.labels.items()}


# Lets Config Connector stop the instance to apply a new machineType, then start it again: a
# workload resized while it runs keeps its VM (greenops.placing.planner.IN_PLACE).
STOP_FOR_UPDATE = {"cnrm.cloud.google.com/allow-stopping-for-update": "true"}


def _metadata(ctx: RenderContext, name: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    notes = {"cnrm.cloud.google.com/project-id": ctx.settings.gcp_project} if ctx.settings.gcp_project else {}
    meta = ctx.metadata(name, {**notes, **(extra or {})} or None)
    meta["labels"] = workload_labels(ctx)
    return meta


def state(obj: dict[str, Any]) -> ObjectState:
    """Config Connector reports ``Ready``; it retries every failure (``UpdateFailed``,
    ``DependencyNotReady``...) and has no terminal state, so a stuck VM ends only by the
    lifecycle's deadline check, with this condition as the reason."""
    stopped = (obj.get("status") or {}).get("currentStatus") == "TERMINATED"  # GCE's word for powered off
    return replace(readiness(condition(obj, "Ready")), stopped=stopped)


@renderer(
    "gcp",
    kinds=[(API, "ComputeNetwork"), (API, "ComputeSubnetwork"), (API, "ComputeInstance")],
    vm_kind="ComputeInstance",
    state=state,
)
def render(ctx: RenderContext) -> list[dict[str, Any]]:
    d = ctx.decision
    zones = ctx.catalog.region("gcp", d.region).availabilityZones
    if not zones:
        raise RenderError(f"workload {ctx.workload.name!r}: no compute zone is known for GCP region {d.region!r}")
    network, subnet, instance = ctx.name("network"), ctx.name("subnet"), ctx.name()
    return [
        {
            "apiVersion": API,
            "kind": "ComputeNetwork",
            "metadata": _metadata(ctx, network),
            "spec": {"autoCreateSubnetworks": False, "routingMode": "REGIONAL"},
        },
        {
            "apiVersion": API,
            "kind": "ComputeSubnetwork",
            "metadata": _metadata(ctx, subnet),
            "spec": {"region": d.region, "ipCidrRange": SUBNET_CIDR, "networkRef": {"name": network}},  # [1]
        },
        {
            "apiVersion": API,
            "kind": "ComputeInstance",
            "metadata": _metadata(ctx, instance, STOP_FOR_UPDATE),
            "spec": {
                "zone": zones[0],  # [1] first compute zone of the chosen region
                "machineType": d.vm_size,  # [2]
                "bootDisk": {
                    "autoDelete": True,
                    "initializeParams": {
                        "size": BOOT_DISK_GB,
                        "type": BOOT_DISK_TYPE,
                        "sourceImageRef": {"external": d.image},  # [3]
                    },
                },
                "networkInterface": [{"subnetworkRef": {"name": subnet}}],
                "metadata": [
                    {"key": "enable-oslogin", "value": "TRUE"},
                    *([{"key": "user-data", "value": data}] if (data := ctx.user_data()) else []),
                ],
            },
        },
    ]
