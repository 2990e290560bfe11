"""Azure, directly through pulumi-azure-native: resource group, virtual network, subnet, network
interface and Linux VM, the same set the ASO renderer emits (greenops/renderers/providers/azure.py).

azure-native's provider does take a ``location``, but only resource groups fall back to it; every
other resource that has a location is given the decision's region explicitly. The subnet has none
(it lives in its virtual network's).
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native
from pulumi_azure_native import compute, network, resources

from greenops.renderers import RenderContext
from greenops.renderers.providers.azure import SUBNET_CIDR, VNET_CIDR, image_reference
from greenops.renderers.user_data import user_data_base64

from .base import DirectSet, Placed, child_options


def build(ctx: RenderContext, placed: Placed, *, existing_group: bool = False) -> DirectSet:
    """The direct Azure set for one placed workload, every resource placed as ``placed`` says.

    With ``existing_group`` the set goes into the settings' ``azure_resource_group``, which must
    exist already (operator mode's platform creates it); otherwise the set has its own group,
    created in the decision's region, so the workload's resources come and go together.
    """
    workload, decision, settings = ctx.workload, ctx.decision, ctx.settings
    region, s = decision.region, settings
    provider = azure_native.Provider(
        ctx.name("provider"),
        azure_native.ProviderArgs(location=region, subscription_id=s.azure_subscription_id),
        opts=placed.provider_options(),
    )
    opts = child_options(provider, placed)
    created: list[pulumi.CustomResource] = []

    group_name: pulumi.Input[str] = s.azure_resource_group
    if not existing_group:
        group = resources.ResourceGroup(
            ctx.name("rg"),
            resources.ResourceGroupArgs(resource_group_name=ctx.name("rg"), location=region, tags=ctx.tags()),
            opts=opts,
        )
        created.append(group)
        group_name = group.name  # an Output: the network waits for the group

    vnet_name, subnet_name, nic_name, vm_name = ctx.name("vnet"), ctx.name("subnet"), ctx.name("nic"), ctx.name()
    vnet = network.VirtualNetwork(
        vnet_name,
        network.VirtualNetworkInitArgs(
            resource_group_name=group_name,
            virtual_network_name=vnet_name,
            location=region,
            address_space=network.AddressSpaceArgs(address_prefixes=[VNET_CIDR]),
            tags=ctx.tags(),
        ),
        opts=opts,
    )
    subnet = network.Subnet(
        subnet_name,
        network.SubnetInitArgs(
            resource_group_name=group_name,
            virtual_network_name=vnet.name,
            subnet_name=subnet_name,
            address_prefix=SUBNET_CIDR,
        ),
        opts=opts,
    )
    nic = network.NetworkInterface(
        nic_name,
        network.NetworkInterfaceArgs(
            resource_group_name=group_name,
            network_interface_name=nic_name,
            location=region,
            ip_configurations=[
                network.NetworkInterfaceIPConfigurationArgs(
                    name="primary",
                    private_ip_allocation_method=network.IPAllocationMethod.DYNAMIC,
                    subnet=network.SubnetArgs(id=subnet.id),
                )
            ],
            tags=ctx.tags(),
        ),
        opts=opts,
    )
    vm = compute.VirtualMachine(
        vm_name,
        compute.VirtualMachineArgs(
            resource_group_name=group_name,
            vm_name=vm_name,
            location=region,
            hardware_profile=compute.HardwareProfileArgs(vm_size=decision.vm_size),
            storage_profile=compute.StorageProfileArgs(
                image_reference=compute.ImageReferenceArgs(**image_reference(decision.image, workload.name)),
                # Azure keeps a VM's OS disk after the VM unless told otherwise; the run's end deletes
                # the VM, and a disk left behind would go on costing.
                os_disk=compute.OSDiskArgs(
                    create_option=compute.DiskCreateOptionTypes.FROM_IMAGE,
                    delete_option=compute.DiskDeleteOptionTypes.DELETE,
                ),
            ),
            os_profile=_os_profile(ctx, vm_name),
            network_profile=compute.NetworkProfileArgs(
                network_interfaces=[compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]
            ),
            tags=ctx.tags(),
        ),
        opts=opts,
    )
    created += [vnet, subnet, nic, vm]
    # The NIC, not the VM, holds the address Azure assigned (dynamic allocation).
    private_ip: pulumi.Output[str] = nic.ip_configurations.apply(lambda configs: configs[0].private_ip_address)
    return DirectSet("azure", provider, tuple(created), vm, vm.id, private_ip)


def _os_profile(ctx: RenderContext, computer_name: str) -> compute.OSProfileArgs:
    """SSH key only, as the renderer has it: password sign-in is switched off, so no password exists;
    the run's cloud-config as customData when the workload has one."""
    admin = ctx.settings.admin_username
    return compute.OSProfileArgs(
        custom_data=user_data_base64(ctx.workload),  # what the VM runs (None: nothing), as ASO takes it
        computer_name=computer_name,
        admin_username=admin,
        linux_configuration=compute.LinuxConfigurationArgs(
            disable_password_authentication=True,
            ssh=compute.SshConfigurationArgs(
                public_keys=[
                    compute.SshPublicKeyArgs(
                        path=f"/home/{admin}/.ssh/authorized_keys", key_data=ctx.settings.ssh_public_key
                    )
                ]
            ),
        ),
    )
