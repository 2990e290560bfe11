"""ACK EC2 controller: VPC, Subnet, SecurityGroup and Instance (thesis §3.4.3)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from greenops.renderers.base import ObjectState, RenderContext, condition, describe, readiness
from greenops.renderers.registry import renderer

API = "ec2.services.k8s.aws/v1alpha1"
REGION_ANNOTATION = "services.k8s.aws/region"
VPC_CIDR = "10.20.0.0/16"
SUBNET_CIDR = "10.20.1.0/24"

# The chart (components/charts/vm-template) reads these through its generated catalog.
CHART_CONSTANTS = {"api": API, "vpcCidr": VPC_CIDR, "subnetCidr": SUBNET_CIDR}


def workload_tags(ctx: RenderContext, name: str) -> list[dict[str, str]]:
    """The AWS tags of a workload's resource ``name``: ACK's objects and direct mode's alike."""
    return [{"key": "Name", "value": name}] + [{"key": k, "value": v} for k, v in ctx.tags().items()]


def state(obj: dict[str, Any]) -> ObjectState:
    """ACK: ``ACK.Terminal=True`` means the controller will not retry until the spec changes;
    ``ACK.ResourceSynced=True`` that the AWS resource matches the spec."""
    terminal = condition(obj, "ACK.Terminal")
    if terminal is not None and terminal.get("status") == "True":
        return ObjectState(False, failure=describe(terminal), detail=describe(terminal))
    state_name = ((obj.get("status") or {}).get("state") or {}).get("name")
    return replace(readiness(condition(obj, "ACK.ResourceSynced")), stopped=state_name == "stopped")


@renderer(
    "aws",
    kinds=[(API, "VPC"), (API, "Subnet"), (API, "SecurityGroup"), (API, "Instance")],
    vm_kind="Instance",
    state=state,
)
def render(ctx: RenderContext) -> list[dict[str, Any]]:
    d = ctx.decision
    region_note = {REGION_ANNOTATION: d.region}  # [1] ACK picks the region per object
    vpc, subnet, sg, instance = ctx.name("vpc"), ctx.name("subnet"), ctx.name("sg"), ctx.name()
    azs = ctx.catalog.region("aws", d.region).availabilityZones
    subnet_spec: dict[str, Any] = {
        "vpcRef": {"from": {"name": vpc}},
        "cidrBlock": SUBNET_CIDR,
        "tags": workload_tags(ctx, subnet),
    }
    if azs:
        subnet_spec["availabilityZone"] = azs[0]
    objects = [
        {
            "apiVersion": API,
            "kind": "VPC",
            "metadata": ctx.metadata(vpc, region_note),
            "spec": {
                "cidrBlocks": [VPC_CIDR],
                "enableDNSSupport": True,
                "enableDNSHostnames": True,
                "tags": workload_tags(ctx, vpc),
            },
        },
        {"apiVersion": API, "kind": "Subnet", "metadata": ctx.metadata(subnet, region_note), "spec": subnet_spec},
        {
            "apiVersion": API,
            "kind": "SecurityGroup",
            "metadata": ctx.metadata(sg, region_note),
            "spec": {
                "name": sg,
                "description": f"GreenOps workload {ctx.workload.name}: egress only",
                "vpcRef": {"from": {"name": vpc}},
                "egressRules": [{"ipProtocol": "-1", "ipRanges": [{"cidrIP": "0.0.0.0/0"}]}],
                "tags": workload_tags(ctx, sg),
            },
        },
    ]
    # ACK's Instance (ec2-controller v1.20) takes its security groups by id only: there is no
    # securityGroupRefs, and without an id the VPC's default group applies. So the Instance waits
    # until the controller has created our group and reported its id; the chart does the same with
    # Helm's lookup.
    group_id = ctx.reported("SecurityGroup", sg, "id")
    if group_id is None:
        ctx.hold(
            "Instance",
            instance,
            f"SecurityGroup {sg} reports its id (status.id), which the Instance "
            "attaches by id (ACK's Instance has no reference to a group)",
        )
        return objects
    return objects + [
        {
            "apiVersion": API,
            "kind": "Instance",
            "metadata": ctx.metadata(instance, region_note),
            "spec": {
                "imageID": d.image,  # [3] region-specific Ubuntu AMI
                "instanceType": d.vm_size,  # [2]
                "subnetRef": {"from": {"name": subnet}},
                "securityGroupIDs": [group_id],
                "minCount": 1,
                "maxCount": 1,
                "metadataOptions": {"httpTokens": "required"},
                **({"userData": data} if (data := ctx.user_data(base64=True)) else {}),
                "tags": workload_tags(ctx, instance),
            },
        },
    ]
