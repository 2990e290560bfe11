"""The workload contract on the real kube-apiserver: the VmTemplate CRD (generated from the chart's
schema, itself generated from the contract) takes every spec the Pulumi path's model takes, and
refuses every form the model refuses, naming the same field, but for the few rules a schema
cannot know (the catalog's regions, the clock, the longest run), which the webhook holds."""

from __future__ import annotations

import pytest

from greenops.local.webhook import GROUP, VERSION
from tests.contract.corpus import BEYOND_THE_SCHEMA, CASES, spec_of
from tests.contract.test_differential import pulumi_path
from tests.support.crd_api import api_server_with_crd

pytestmark = [pytest.mark.e2e, pytest.mark.tools]
PATH = f"/apis/{GROUP}/{VERSION}/namespaces/contract/vmtemplates"


@pytest.fixture(scope="module")
def api():
    with api_server_with_crd("contract") as cp:
        yield cp


def test_the_crd_agrees_with_the_model_on_the_corpus(api):
    disagree = {}
    with api.client() as k:
        for i, (case, overrides) in enumerate(CASES.items()):
            workload, fields, messages = pulumi_path(spec_of(overrides))
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "VmTemplate",
                "metadata": {"name": f"case-{i}"},
                "spec": spec_of(overrides),
            }
            # as kubectl asks (its default since 1.27): a field the schema does not know is refused, not pruned
            r = k.post(PATH, params={"fieldValidation": "Strict"}, json=body)
            stored = r.status_code == 201
            if stored:
                k.delete(f"{PATH}/case-{i}")
            if workload is not None and not stored:
                disagree[case] = f"the model takes it, the API server refuses it: {r.text[-300:]}"
            elif workload is None and stored and case not in BEYOND_THE_SCHEMA:
                disagree[case] = f"the model refuses {sorted(fields)} {messages}, the API server stores it"
            elif workload is None and not stored and not any(f"spec.{f}" in r.text for f in fields):
                disagree[case] = (
                    f"the model refuses {sorted(fields)}, the API server names another field: {r.text[-300:]}"
                )
            elif stored and case in BEYOND_THE_SCHEMA and workload is None:
                continue  # the webhook's to refuse (tests/contract/test_differential.py)
    assert disagree == {}
