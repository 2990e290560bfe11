"""The CRD validator must catch what the API server would silently prune or reject."""

import copy

import pytest

from greenops.renderers import render
from tests.support.references import group_reported

pytestmark = pytest.mark.crds


@pytest.fixture
def instance(make_workload, decide):
    w = make_workload()
    d = decide(w, "aws", "eu-west-3")
    return [o for o in render(w, d, observed=group_reported(w.name)) if o["kind"] == "Instance"][0]


def test_valid_object_has_no_errors(crd_schemas, instance):
    assert crd_schemas.errors(instance) == []


def test_misspelled_field_is_reported(crd_schemas, instance):
    bad = copy.deepcopy(instance)
    bad["spec"]["instanceTyp"] = bad["spec"].pop("instanceType")
    errs = crd_schemas.errors(bad)
    assert any("instanceTyp" in e and "Instance/train-1" in e for e in errs), errs


def test_wrong_type_is_reported_with_its_path(crd_schemas, instance):
    bad = copy.deepcopy(instance)
    bad["spec"]["maxCount"] = "one"
    assert any(e.startswith("Instance/train-1: spec.maxCount:") for e in crd_schemas.errors(bad))


def test_missing_required_field_is_reported(crd_schemas):
    vpc = {"apiVersion": "ec2.services.k8s.aws/v1alpha1", "kind": "VPC", "metadata": {"name": "v"}, "spec": {}}
    assert any("'cidrBlocks' is a required property" in e for e in crd_schemas.errors(vpc))


def test_unknown_version_is_reported(crd_schemas, instance):
    bad = dict(instance, apiVersion="ec2.services.k8s.aws/v9")
    assert crd_schemas.errors(bad) == ["Instance/train-1: no CRD serves ec2.services.k8s.aws/v9 Instance"]


def test_thesis_azure_api_version_is_served(crd_schemas):
    assert ("compute.azure.com/v1api20220301", "VirtualMachine") in crd_schemas.kinds()
