"""What every cloud's direct set must hold: exactly its resource types, all under the caller's
parent and the set's own regional provider, nothing secret in plain text, and the VM's real
identifiers as outputs."""

from __future__ import annotations

from collections import Counter

import pulumi
import pytest

from greenops import direct
from greenops.common.errors import RenderError
from greenops.renderers.user_data import user_data, user_data_base64

from .helpers import settle
from .mocks import ASSIGNED_IP, PARENT_TYPE, SDK_DEPRECATIONS, is_secret, plaintext_secrets, secret

pytestmark = SDK_DEPRECATIONS

EXPECTED = {
    "azure": Counter(
        {
            "pulumi:providers:azure-native": 1,
            "azure-native:resources:ResourceGroup": 1,
            "azure-native:network:VirtualNetwork": 1,
            "azure-native:network:Subnet": 1,
            "azure-native:network:NetworkInterface": 1,
            "azure-native:compute:VirtualMachine": 1,
        }
    ),
    "gcp": Counter(
        {
            "pulumi:providers:gcp": 1,
            "gcp:compute/network:Network": 1,
            "gcp:compute/subnetwork:Subnetwork": 1,
            "gcp:compute/instance:Instance": 1,
        }
    ),
    "aws": Counter(
        {
            "pulumi:providers:aws": 1,
            "aws:ec2/vpc:Vpc": 1,
            "aws:ec2/subnet:Subnet": 1,
            "aws:ec2/securityGroup:SecurityGroup": 1,
            "aws:ec2/instance:Instance": 1,
        }
    ),
}
VM_TYPES = {
    "azure": "azure-native:compute:VirtualMachine",
    "gcp": "gcp:compute/instance:Instance",
    "aws": "aws:ec2/instance:Instance",
}
# The provider input that carries the region, per cloud
REGION_INPUT = {"azure": "location", "gcp": "region", "aws": "region"}


def _provider_type(cloud: str) -> str:
    return next(t for t in EXPECTED[cloud] if t.startswith("pulumi:providers:"))


def test_expectations_cover_every_cloud():
    assert set(EXPECTED) == set(direct.CLOUDS) == set(VM_TYPES) == set(REGION_INPUT)


@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pulumi.runtime.test
def test_exactly_these_resources_under_the_parent(cloud, mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed(cloud), settings, parent)

    def check(s):
        assert mocks.types() == EXPECTED[cloud]
        assert built.cloud == cloud
        assert len(built.resources) == sum(EXPECTED[cloud].values()) - 1  # all but the provider
        # A child's URN carries its parent's type: ...::greenops:index:GreenWorkload$azure-native:...
        for urn in [s.provider_urn, *s.urns]:
            assert f"::{PARENT_TYPE}$" in urn, urn
        assert built.vm in built.resources
        assert mocks.one(VM_TYPES[cloud]).name == workload.name

    return settle(built).apply(check)


@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pulumi.runtime.test
def test_every_resource_uses_the_sets_regional_provider(cloud, mocks, workload, placed, settings, parent):
    decision = placed(cloud)
    built = direct.build(workload, decision, settings, parent)

    def check(s):
        provider = mocks.one(_provider_type(cloud))
        assert provider.inputs[REGION_INPUT[cloud]] == decision.region
        for r in mocks.created():
            if r.typ != provider.typ:
                # never the ambient default provider, whose region is whatever the machine says
                assert r.provider == s.provider_ref, f"{r.typ} {r.name} uses {r.provider!r}"

    return settle(built).apply(check)


@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pulumi.runtime.test
def test_nothing_secret_in_plain_text(cloud, mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed(cloud), settings, parent)

    def check(_):
        for r in mocks.created():
            assert plaintext_secrets(r.inputs) == [], f"{r.typ} {r.name}"
        # The sets need no credential at all: the providers take theirs from the environment.
        assert not [r for r in mocks.created() if any(is_secret(v) for v in r.inputs.values())]

    return settle(built).apply(check)


def test_the_secret_check_finds_a_plain_credential():
    inputs = {
        "osProfile": {"adminPassword": "pw", "linuxConfiguration": {"disablePasswordAuthentication": True}},
        "clientSecret": secret("pw"),
        "accessKey": "AKIA",
        "skipCredentialsValidation": "false",
    }
    assert plaintext_secrets(inputs) == ["osProfile/adminPassword", "accessKey"]


@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pulumi.runtime.test
def test_outputs_are_the_vms_identifiers(cloud, mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed(cloud), settings, parent)

    def check(s):
        assert s.resource_id == f"{workload.name}-id"  # the mocks' id of the VM resource
        assert s.private_ip == ASSIGNED_IP[cloud]

    return settle(built).apply(check)


def test_an_unknown_cloud_is_refused(workload, placed, settings, mocks, parent):
    decision = placed("aws").model_copy(update={"provider": "oracle"})
    with pytest.raises(RenderError, match="no direct set for provider 'oracle'"):
        direct.build(workload, decision, settings, parent)


# Where each cloud's VM takes the run's cloud-config, and whether base64 (as its operator takes it)
RUN_INPUT = {
    "azure": (("osProfile", "customData"), True),
    "gcp": (("metadata", "user-data"), False),
    "aws": (("userDataBase64",), True),
}


@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pytest.mark.parametrize("runs", [True, False], ids=["run", "no-run"])
@pulumi.runtime.test
def test_the_run_reaches_the_vm_as_on_the_operator_path(cloud, runs, mocks, make_workload, placed, settings, parent):
    run = {"run": {"script": "#!/bin/sh\necho done > /var/tmp/result\n"}} if runs else {}
    workload = make_workload(name="train-1", tenant="ML-team", **run)
    built = direct.build(workload, placed(cloud), settings, parent)
    path, encoded = RUN_INPUT[cloud]

    def check(_):
        value = mocks.one(VM_TYPES[cloud]).inputs
        for key in path[:-1]:
            value = value[key]
        expected = (user_data_base64 if encoded else user_data)(workload)
        assert value.get(path[-1]) == expected and (expected is not None) == runs

    return settle(built).apply(check)
