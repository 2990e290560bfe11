"""AWS, directly through pulumi-aws: VPC, subnet, security group and instance, the same set the ACK
renderer emits (greenops/renderers/providers/aws.py), with its CIDRs, tags and egress-only group.

Unlike ACK's Instance, pulumi-aws takes the group by reference, so the instance does not wait for
a reported id: the engine orders the two.
"""

from __future__ import annotations

import pulumi_aws as aws
from pulumi_aws import ec2

from greenops.renderers import RenderContext
from greenops.renderers.providers.aws import SUBNET_CIDR, VPC_CIDR, workload_tags
from greenops.renderers.user_data import user_data_base64

from .base import DirectSet, Placed, child_options


def _tag_map(ctx: RenderContext, name: str) -> dict[str, str]:
    """The renderer's tags (``Name`` plus the owner tags), as the map pulumi-aws takes."""
    return {t["key"]: t["value"] for t in workload_tags(ctx, name)}


def build(ctx: RenderContext, placed: Placed) -> DirectSet:
    """The direct AWS set for one placed workload, every resource placed as ``placed`` says."""
    workload, decision = ctx.workload, ctx.decision
    region = decision.region
    # pulumi-aws 7 also takes a per-resource ``region``; none is set, so the provider's is the only one.
    provider = aws.Provider(ctx.name("provider"), aws.ProviderArgs(region=region), opts=placed.provider_options())
    opts = child_options(provider, placed)
    vpc_name, subnet_name, sg_name, instance_name = ctx.name("vpc"), ctx.name("subnet"), ctx.name("sg"), ctx.name()
    vpc = ec2.Vpc(
        vpc_name,
        ec2.VpcArgs(
            cidr_block=VPC_CIDR, enable_dns_support=True, enable_dns_hostnames=True, tags=_tag_map(ctx, vpc_name)
        ),
        opts=opts,
    )
    zones = ctx.catalog.region("aws", region).availabilityZones
    subnet = ec2.Subnet(
        subnet_name,
        ec2.SubnetArgs(
            vpc_id=vpc.id,
            cidr_block=SUBNET_CIDR,
            availability_zone=zones[0] if zones else None,  # as the renderer: AWS picks one when none is known
            tags=_tag_map(ctx, subnet_name),
        ),
        opts=opts,
    )
    group = ec2.SecurityGroup(
        sg_name,
        ec2.SecurityGroupArgs(
            name=sg_name,
            description=f"GreenOps workload {workload.name}: egress only",
            vpc_id=vpc.id,
            # pulumi-aws removes the rule AWS adds to a new group unless it is declared: declare it.
            egress=[ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"])],
            tags=_tag_map(ctx, sg_name),
        ),
        opts=opts,
    )
    instance = ec2.Instance(
        instance_name,
        ec2.InstanceArgs(
            ami=decision.image,  # the catalog's AMI for this region, recorded in the decision
            instance_type=decision.vm_size,
            subnet_id=subnet.id,
            vpc_security_group_ids=[group.id],
            metadata_options=ec2.InstanceMetadataOptionsArgs(http_tokens="required"),
            user_data_base64=user_data_base64(workload),  # what the VM runs (None: nothing), as ACK takes it
            tags=_tag_map(ctx, instance_name),
        ),
        opts=opts,
    )
    return DirectSet("aws", provider, (vpc, subnet, group, instance), instance, instance.id, instance.private_ip)
