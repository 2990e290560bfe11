"""The VmTemplate CRD (as Krateo generates it from the chart's schema) on a real kube-apiserver, with
no webhook in front: the API server itself refuses every hostile string, naming the field, and
takes the valid ones. Admission refuses them earlier with its own reasons
(tests/policies/test_tenant_strings.py); this is the layer that holds if admission is bypassed."""

from __future__ import annotations

import pytest

from greenops.local.webhook import GROUP, VERSION
from greenops.models.strings import RULES
from tests.policies.test_tenant_strings import CORPUS
from tests.support.crd_api import api_server_with_crd

pytestmark = [pytest.mark.e2e, pytest.mark.tools]
PATH = f"/apis/{GROUP}/{VERSION}/namespaces/crd-test/vmtemplates"
SPEC = {"vmName": "vm-1", "cpu": 2, "memory": 4, "duration": "2h", "deadline": "2030-01-01T00:00:00Z"}
SPEC["maxLatency"], SPEC["originRegion"] = 2000, "westeurope"


@pytest.fixture(scope="module")
def api():
    with api_server_with_crd("crd-test") as cp:
        yield cp


def test_the_api_server_applies_every_string_rule(api):
    """Each corpus value of each field: created (then deleted) when the rule takes it, 422 naming
    spec.<field> when it refuses it."""
    disagree = []
    with api.client() as k:
        for i, (field, value) in enumerate((f, v) for f in RULES for v in CORPUS[f]):
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "VmTemplate",
                "metadata": {"name": f"case-{i}"},
                "spec": dict(SPEC, **{field: value}),
            }
            r = k.post(PATH, json=body)
            valid = RULES[field].problem(value) is None
            if r.status_code == 201:
                k.delete(f"{PATH}/case-{i}")
            if valid != (r.status_code == 201) or (not valid and f"spec.{field}" not in r.text):
                disagree.append((field, value[:60], r.status_code, r.text[-300:]))
    assert disagree == []
