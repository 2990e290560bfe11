"""Every input of every direct set fits the provider's own schema (the subsets in
data/provider-schemas/), and those subsets still match the installed SDKs."""

from __future__ import annotations

import copy
import gzip
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pulumi
import pytest

from greenops import direct
from greenops.direct.schema import PACKAGES, SCHEMA_DIR, load, validate

from .helpers import settle
from .mocks import SDK_DEPRECATIONS

pytestmark = SDK_DEPRECATIONS


@pytest.fixture(scope="module")
def derivation() -> ModuleType:
    """scripts/derive_provider_schemas.py, a tool rather than part of the greenops package."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "derive_provider_schemas.py"
    spec = importlib.util.spec_from_file_location("derive_provider_schemas", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


# -- the direct sets' inputs ---------------------------------------------------------------------------
@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pulumi.runtime.test
def test_every_input_fits_the_provider_schema(cloud, mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed(cloud), settings, parent)
    subset = load(PACKAGES[cloud])

    def check(_):
        for r in mocks.created():
            assert validate(subset, r.typ, r.inputs) == [], f"{r.typ} {r.name}"
        # the subset covers exactly what the set creates: nothing in it goes unchecked by this test
        covered = {f"pulumi:providers:{subset['name']}", *subset["resources"]}
        assert {r.typ for r in mocks.created()} == covered

    return settle(built).apply(check)


@pulumi.runtime.test
def test_azure_set_in_an_existing_group_fits_too(mocks, workload, placed, settings, parent):
    built = direct.build(workload, placed("azure"), settings, parent, azure_existing_group=True)
    subset = load("azure-native")

    def check(_):
        for r in mocks.created():
            assert validate(subset, r.typ, r.inputs) == [], f"{r.typ} {r.name}"

    return settle(built).apply(check)


# -- what the check refuses -----------------------------------------------------------------------------
INSTANCE = {
    "ami": "ami-0",
    "instanceType": "t3.small",
    "subnetId": "subnet-0",
    "vpcSecurityGroupIds": ["sg-0"],
    "metadataOptions": {"httpTokens": "required"},
    "tags": {"Name": "train-1"},
}
VM_KEYS = {"keyData": "ssh-ed25519 AAAA", "path": "/home/greenops/.ssh/authorized_keys"}


def test_a_misspelt_property_fails_with_its_path():
    inputs = {k if k != "vpcSecurityGroupIds" else "vpcSecurityGroupId": v for k, v in INSTANCE.items()}
    assert validate(load("aws"), "aws:ec2/instance:Instance", INSTANCE) == []
    assert validate(load("aws"), "aws:ec2/instance:Instance", inputs) == [
        "aws:ec2/instance:Instance: <root>: Additional properties are not allowed ('vpcSecurityGroupId' was unexpected)"
    ]


def test_a_misspelt_nested_property_fails_with_its_path():
    vm = {
        "resourceGroupName": "rg",
        "osProfile": {"linuxConfiguration": {"ssh": {"publicKeys": [dict(VM_KEYS, key_data=VM_KEYS["keyData"])]}}},
    }
    (error,) = validate(load("azure-native"), "azure-native:compute:VirtualMachine", vm)
    assert error.startswith("azure-native:compute:VirtualMachine: osProfile/linuxConfiguration/ssh/publicKeys/0: ")
    assert "'key_data' was unexpected" in error


def test_a_missing_required_input_and_a_wrong_shape_fail():
    errors = validate(load("aws"), "aws:ec2/subnet:Subnet", {"cidrBlock": ["10.20.1.0/24"]})
    assert errors == [
        "aws:ec2/subnet:Subnet: <root>: 'vpcId' is a required property",
        "aws:ec2/subnet:Subnet: cidrBlock: ['10.20.1.0/24'] is not of type 'string'",
    ]
    boot = {"bootDisk": {"initializeParams": {"size": "20"}}, "machineType": "e2-small", "networkInterfaces": []}
    assert validate(load("gcp"), "gcp:compute/instance:Instance", boot) == [
        "gcp:compute/instance:Instance: bootDisk/initializeParams/size: '20' is not of type 'integer'"
    ]


def test_provider_configuration_is_checked_after_decoding():
    # the SDK sends non-string provider configuration as JSON text; it is decoded, then checked
    assert validate(load("aws"), "pulumi:providers:aws", {"region": "eu-north-1", "skipRegionValidation": "true"}) == []
    assert validate(load("aws"), "pulumi:providers:aws", {"regoin": "eu-north-1"}) == [
        "pulumi:providers:aws: <root>: Additional properties are not allowed ('regoin' was unexpected)"
    ]


@pulumi.runtime.test
def test_a_mistake_the_sdk_lets_through_is_caught(mocks, parent):
    """A mapping for a nested input is sent as written: the SDK's types cannot see a misspelt key."""
    from pulumi_aws import ec2

    instance = ec2.Instance(
        "loose",
        ec2.InstanceArgs(ami="ami-0", instance_type="t3.small", metadata_options={"http_tokenz": "required"}),
        opts=pulumi.ResourceOptions(parent=parent),
    )

    def check(_):
        (error,) = validate(load("aws"), "aws:ec2/instance:Instance", mocks.one("aws:ec2/instance:Instance").inputs)
        assert error.startswith("aws:ec2/instance:Instance: metadataOptions: ")
        assert "'http_tokenz' was unexpected" in error

    return instance.urn.apply(check)


def test_a_type_outside_the_subset_is_named():
    with pytest.raises(KeyError, match="aws:ec2/eip:Eip is not in the aws schema subset"):
        validate(load("aws"), "aws:ec2/eip:Eip", {})


# -- the committed subsets -------------------------------------------------------------------------------
def test_the_subsets_match_the_installed_sdks(derivation):
    # after an SDK upgrade that renames, retypes or drops a property the sets use, this lists it:
    # run scripts/derive_provider_schemas.py (and fix greenops/direct if a name went away)
    assert derivation.check(SCHEMA_DIR) == []


def test_a_renamed_property_is_reported(derivation):
    committed = load("aws")
    renamed = copy.deepcopy(committed)
    props = renamed["resources"]["aws:ec2/instance:Instance"]["inputProperties"]
    props["securityGroupIds"] = props.pop("vpcSecurityGroupIds")
    assert derivation.differences("aws", committed, renamed) == [
        "aws: aws:ec2/instance:Instance securityGroupIds: committed None, derived 'array'",
        "aws: aws:ec2/instance:Instance securityGroupIds[]: committed None, derived 'string'",
        "aws: aws:ec2/instance:Instance vpcSecurityGroupIds: committed 'array', derived None",
        "aws: aws:ec2/instance:Instance vpcSecurityGroupIds[]: committed 'string', derived None",
    ]


@pytest.mark.parametrize("package", sorted(PACKAGES.values()))
def test_a_published_schema_gives_the_same_subset(package, derivation, tmp_path):
    """--schema, fed a file in the published schema's shape: here the SDK's whole input closure of
    the same types, gzipped, with the "/" in its local references written as %2F, as published schemas may."""
    table = derivation.SUBSETS[package]
    published = derivation.from_sdk(table.sdk, list(table.keep))
    text = re.sub(
        r'"#/types/([^"]+)"', lambda m: '"#/types/' + m.group(1).replace("/", "%2F") + '"', json.dumps(published)
    )
    path = tmp_path / f"{package}.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    derived = derivation.derive(package, path)
    assert derived["source"].endswith("schema.json (pulumi package get-schema)")
    assert derivation.differences(package, load(package), derived) == []


def test_a_schema_of_another_version_is_refused(derivation, tmp_path):
    path = tmp_path / "gcp.json"
    path.write_text(json.dumps({"name": "gcp", "version": "9.35.0", "resources": {}, "types": {}}))
    with pytest.raises(ValueError, match="is gcp 9.35.0; the installed pulumi_gcp is gcp 10.2.0"):
        derivation.derive("gcp", path)


@pytest.mark.parametrize("package", sorted(PACKAGES.values()))
def test_the_subsets_stay_small(package):
    assert (SCHEMA_DIR / f"{package}.json").stat().st_size < 10_000
