"""Each cloud's set against the operator-mode renderer of the same decision: the same names,
tags, labels, address ranges, sizes and images, so both modes leave the same marks in the cloud;
and what is particular to each cloud (Azure's group and SSH-only sign-in, GCP's zone and project,
AWS's security group)."""

from __future__ import annotations

import pulumi
import pytest

from greenops import direct
from greenops.common.errors import RenderError
from greenops.renderers import render

from .helpers import settle
from .mocks import SDK_DEPRECATIONS

pytestmark = SDK_DEPRECATIONS


def by_kind(objects: list[dict]) -> dict[str, dict]:
    return {o["kind"]: o for o in objects}


# -- Azure -------------------------------------------------------------------------------------------
@pulumi.runtime.test
def test_azure_matches_the_aso_renderer(mocks, workload, placed, settings, parent, catalog):
    decision = placed("azure")
    built = direct.build(workload, decision, settings, parent)
    aso = by_kind(render(workload, decision, settings))

    def check(_):
        vnet = mocks.one("azure-native:network:VirtualNetwork").inputs
        subnet = mocks.one("azure-native:network:Subnet").inputs
        nic = mocks.one("azure-native:network:NetworkInterface").inputs
        vm = mocks.one("azure-native:compute:VirtualMachine").inputs
        group = mocks.one("azure-native:resources:ResourceGroup").inputs
        assert vnet["virtualNetworkName"] == aso["VirtualNetwork"]["metadata"]["name"] == "train-1-vnet"
        assert subnet["subnetName"] == aso["VirtualNetworksSubnet"]["metadata"]["name"]
        assert nic["networkInterfaceName"] == aso["NetworkInterface"]["metadata"]["name"]
        assert vm["vmName"] == aso["VirtualMachine"]["metadata"]["name"] == workload.name
        for ours, kind in [(vnet, "VirtualNetwork"), (nic, "NetworkInterface"), (vm, "VirtualMachine")]:
            assert ours["tags"] == aso[kind]["spec"]["tags"]
            assert ours["location"] == aso[kind]["spec"]["location"] == decision.region
        assert (
            group["tags"]
            == vm["tags"]
            == {
                "greenops-workload": "train-1",
                "greenops-tenant": "ML-team",
                "managed-by": "greenops",
            }
        )
        assert vnet["addressSpace"] == aso["VirtualNetwork"]["spec"]["addressSpace"]
        assert subnet["addressPrefix"] == aso["VirtualNetworksSubnet"]["spec"]["addressPrefix"]
        spec = aso["VirtualMachine"]["spec"]
        assert vm["hardwareProfile"] == spec["hardwareProfile"] == {"vmSize": decision.vm_size}
        assert vm["storageProfile"]["imageReference"] == spec["storageProfile"]["imageReference"]
        assert vm["storageProfile"]["imageReference"] == catalog.azure_image.model_dump()
        assert vm["osProfile"] == spec["osProfile"]  # the admin, the SSH key, password sign-in off
        # every resource but the subnet (which lives in its network's) is placed in the region itself
        located = {r.typ for r in mocks.created() if "location" in r.inputs}
        assert {r.typ for r in mocks.created()} - located == {"azure-native:network:Subnet"}
        assert {r.inputs["location"] for r in mocks.created() if "location" in r.inputs} == {decision.region}

    return settle(built).apply(check)


@pulumi.runtime.test
def test_azure_vm_signs_in_by_ssh_key_only(mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed("azure"), settings, parent)

    def check(_):
        os_profile = mocks.one("azure-native:compute:VirtualMachine").inputs["osProfile"]
        assert "adminPassword" not in os_profile
        linux = os_profile["linuxConfiguration"]
        assert linux["disablePasswordAuthentication"] is True
        assert linux["ssh"]["publicKeys"] == [
            {"path": "/home/greenops/.ssh/authorized_keys", "keyData": settings.ssh_public_key}
        ]

    return settle(built).apply(check)


@pulumi.runtime.test
def test_azure_set_has_its_own_group_in_the_region(mocks, workload, placed, settings, parent):
    decision = placed("azure")
    built = direct.build(workload, decision, settings, parent)

    def check(_):
        group = mocks.one("azure-native:resources:ResourceGroup")
        assert group.inputs["resourceGroupName"] == group.name == "train-1-rg"
        assert group.inputs["location"] == decision.region
        provider = mocks.one("pulumi:providers:azure-native").inputs
        assert provider["subscriptionId"] == settings.azure_subscription_id
        # the group's name reaches every resource that lives in it (the mocks echo it back)
        for r in mocks.created():
            if r.typ not in ("pulumi:providers:azure-native", "azure-native:resources:ResourceGroup"):
                assert r.inputs["resourceGroupName"] == "train-1-rg", r.typ

    return settle(built).apply(check)


@pulumi.runtime.test
def test_azure_set_can_go_into_the_settings_existing_group(mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed("azure"), settings, parent, azure_existing_group=True)

    def check(_):
        assert "azure-native:resources:ResourceGroup" not in mocks.types()
        for r in mocks.created():
            if r.typ != "pulumi:providers:azure-native":
                assert r.inputs["resourceGroupName"] == settings.azure_resource_group == "greenops-workloads"

    return settle(built).apply(check)


@pytest.mark.parametrize(
    "missing, message",
    [("ssh_public_key", "set sshPublicKey"), ("azure_subscription_id", "set azureSubscriptionId")],
)
def test_azure_needs_a_key_and_a_subscription(missing, message, mocks, workload, placed, settings, parent):
    incomplete = settings.model_copy(update={missing: None})
    with pytest.raises(RenderError, match=message):
        direct.build(workload, placed("azure"), incomplete, parent)


# -- GCP ---------------------------------------------------------------------------------------------
@pulumi.runtime.test
def test_gcp_matches_the_config_connector_renderer(mocks, workload, placed, settings, parent, catalog):
    decision = placed("gcp")
    built = direct.build(workload, decision, settings, parent)
    kcc = by_kind(render(workload, decision, settings))

    def check(_):
        network = mocks.one("gcp:compute/network:Network").inputs
        subnet = mocks.one("gcp:compute/subnetwork:Subnetwork").inputs
        instance = mocks.one("gcp:compute/instance:Instance").inputs
        assert network["name"] == kcc["ComputeNetwork"]["metadata"]["name"] == "train-1-network"
        assert subnet["name"] == kcc["ComputeSubnetwork"]["metadata"]["name"]
        assert instance["name"] == kcc["ComputeInstance"]["metadata"]["name"] == workload.name
        assert network["autoCreateSubnetworks"] is kcc["ComputeNetwork"]["spec"]["autoCreateSubnetworks"] is False
        assert network["routingMode"] == kcc["ComputeNetwork"]["spec"]["routingMode"]
        assert subnet["network"] == "train-1-network-id"  # by reference to our network
        assert subnet["ipCidrRange"] == kcc["ComputeSubnetwork"]["spec"]["ipCidrRange"]
        assert subnet["region"] == kcc["ComputeSubnetwork"]["spec"]["region"] == decision.region
        spec = kcc["ComputeInstance"]["spec"]
        # Config Connector copies its object's labels onto the instance: ours carries the same
        assert instance["labels"] == kcc["ComputeInstance"]["metadata"]["labels"]
        assert instance["labels"] == {
            "greenops-workload": "train-1",
            "greenops-tenant": "ml-team",
            "greenops-provider": "gcp",
            "greenops-managed-by": "greenops",
        }
        assert instance["zone"] == spec["zone"] == catalog.region("gcp", decision.region).availabilityZones[0]
        assert instance["machineType"] == spec["machineType"] == decision.vm_size
        params = instance["bootDisk"]["initializeParams"]
        assert params["image"] == spec["bootDisk"]["initializeParams"]["sourceImageRef"]["external"]
        assert params["image"] == catalog.image("gcp", decision.region)
        assert params["size"] == spec["bootDisk"]["initializeParams"]["size"]
        assert params["type"] == spec["bootDisk"]["initializeParams"]["type"]
        assert instance["bootDisk"]["autoDelete"] is True
        assert instance["networkInterfaces"] == [{"subnetwork": "train-1-subnet-id"}]
        assert instance["metadata"] == {m["key"]: m["value"] for m in spec["metadata"]}
        assert mocks.one("pulumi:providers:gcp").inputs == {"project": "greenops-test", "region": decision.region}

    return settle(built).apply(check)


def test_gcp_needs_a_project(mocks, workload, placed, settings, parent):
    with pytest.raises(RenderError, match="set gcpProject"):
        direct.build(workload, placed("gcp"), settings.model_copy(update={"gcp_project": None}), parent)


# -- AWS ---------------------------------------------------------------------------------------------
def aws_tags(obj: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in obj["spec"]["tags"]}


@pulumi.runtime.test
def test_aws_matches_the_ack_renderer(mocks, workload, placed, settings, parent, catalog):
    decision = placed("aws")
    built = direct.build(workload, decision, settings, parent)
    # ACK's Instance is rendered once its security group's id is reported
    ack = by_kind(render(workload, decision, settings, observed={"SecurityGroup/train-1-sg": {"id": "sg-0"}}))

    def check(_):
        vpc = mocks.one("aws:ec2/vpc:Vpc")
        subnet = mocks.one("aws:ec2/subnet:Subnet")
        group = mocks.one("aws:ec2/securityGroup:SecurityGroup")
        instance = mocks.one("aws:ec2/instance:Instance")
        for ours, kind in [(vpc, "VPC"), (subnet, "Subnet"), (group, "SecurityGroup"), (instance, "Instance")]:
            assert ours.name == ack[kind]["metadata"]["name"]
            assert ours.inputs["tags"] == aws_tags(ack[kind])
        assert instance.inputs["tags"] == {
            "Name": "train-1",
            "greenops-workload": "train-1",
            "greenops-tenant": "ML-team",
            "managed-by": "greenops",
        }
        assert [vpc.inputs["cidrBlock"]] == ack["VPC"]["spec"]["cidrBlocks"]
        assert vpc.inputs["enableDnsSupport"] is ack["VPC"]["spec"]["enableDNSSupport"] is True
        assert vpc.inputs["enableDnsHostnames"] is ack["VPC"]["spec"]["enableDNSHostnames"] is True
        assert subnet.inputs["cidrBlock"] == ack["Subnet"]["spec"]["cidrBlock"]
        assert subnet.inputs["availabilityZone"] == ack["Subnet"]["spec"]["availabilityZone"]
        assert subnet.inputs["availabilityZone"] == catalog.region("aws", decision.region).availabilityZones[0]
        assert group.inputs["name"] == ack["SecurityGroup"]["spec"]["name"]
        assert group.inputs["description"] == ack["SecurityGroup"]["spec"]["description"]
        assert group.inputs["egress"] == [{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}]
        assert "ingress" not in group.inputs  # egress only, as ACK's
        spec = ack["Instance"]["spec"]
        assert instance.inputs["ami"] == spec["imageID"] == catalog.image("aws", decision.region)
        assert instance.inputs["instanceType"] == spec["instanceType"] == decision.vm_size
        assert instance.inputs["metadataOptions"] == spec["metadataOptions"] == {"httpTokens": "required"}
        # the provider alone says the region: no resource overrides it (pulumi-aws 7 would let it)
        assert not [r.typ for r in mocks.created() if r.typ != "pulumi:providers:aws" and "region" in r.inputs]

    return settle(built).apply(check)


@pulumi.runtime.test
def test_aws_instance_is_in_our_group_and_subnet(mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed("aws"), settings, parent)

    def check(_):
        vpc = mocks.one("aws:ec2/vpc:Vpc")
        group = mocks.one("aws:ec2/securityGroup:SecurityGroup")
        subnet = mocks.one("aws:ec2/subnet:Subnet")
        instance = mocks.one("aws:ec2/instance:Instance").inputs
        # by id, through vpc_security_group_ids: not the VPC's default group, and not by name
        # (security_groups, which is for EC2-Classic and default VPCs)
        assert instance["vpcSecurityGroupIds"] == [f"{group.name}-id"]
        assert "securityGroups" not in instance
        assert instance["subnetId"] == f"{subnet.name}-id"
        assert group.inputs["vpcId"] == subnet.inputs["vpcId"] == f"{vpc.name}-id"

    return settle(built).apply(check)
