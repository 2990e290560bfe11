"""GCP, directly through pulumi-gcp: network, subnetwork and instance, the same set the Config
Connector renderer emits (greenops/renderers/providers/gcp.py), with its names, labels and zone."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
from pulumi_gcp import compute

from greenops.common.errors import RenderError
from greenops.renderers import RenderContext
from greenops.renderers.providers.gcp import BOOT_DISK_GB, BOOT_DISK_TYPE, SUBNET_CIDR, workload_labels
from greenops.renderers.user_data import user_data

from .base import DirectSet, Placed, child_options


def build(ctx: RenderContext, placed: Placed) -> DirectSet:
    """The direct GCP set for one placed workload, every resource placed as ``placed`` says."""
    workload, decision, settings = ctx.workload, ctx.decision, ctx.settings
    region = decision.region
    zones = ctx.catalog.region("gcp", region).availabilityZones
    if not zones:
        raise RenderError(f"workload {workload.name!r}: no compute zone is known for GCP region {region!r}")
    provider = gcp.Provider(
        ctx.name("provider"),
        gcp.ProviderArgs(project=settings.gcp_project, region=region),
        opts=placed.provider_options(),
    )
    opts = child_options(provider, placed)
    network_name, subnet_name, instance_name = ctx.name("network"), ctx.name("subnet"), ctx.name()
    # GCP names resources by their ``name`` (no random suffix), as Config Connector does by metadata.name.
    net = compute.Network(
        network_name,
        compute.NetworkArgs(name=network_name, auto_create_subnetworks=False, routing_mode="REGIONAL"),
        opts=opts,
    )
    subnet = compute.Subnetwork(
        subnet_name,
        compute.SubnetworkArgs(name=subnet_name, network=net.id, region=region, ip_cidr_range=SUBNET_CIDR),
        opts=opts,
    )
    # Networks and subnetworks take no labels in GCP (Config Connector keeps them on its objects
    # only), so the instance is the one that carries them.
    instance = compute.Instance(
        instance_name,
        compute.InstanceArgs(
            name=instance_name,
            zone=zones[0],  # the renderer's pick: the region's first compute zone
            machine_type=decision.vm_size,
            boot_disk=compute.InstanceBootDiskArgs(
                auto_delete=True,
                initialize_params=compute.InstanceBootDiskInitializeParamsArgs(
                    size=BOOT_DISK_GB, type=BOOT_DISK_TYPE, image=decision.image
                ),
            ),
            network_interfaces=[compute.InstanceNetworkInterfaceArgs(subnetwork=subnet.id)],
            # what the VM runs, as Config Connector's user-data item (greenops.renderers.user_data)
            metadata={"enable-oslogin": "TRUE", **({"user-data": data} if (data := user_data(workload)) else {})},
            labels=workload_labels(ctx),
        ),
        opts=opts,
    )
    private_ip: pulumi.Output[str] = instance.network_interfaces.apply(lambda nics: nics[0].network_ip)
    return DirectSet("gcp", provider, (net, subnet, instance), instance, instance.id, private_ip)
