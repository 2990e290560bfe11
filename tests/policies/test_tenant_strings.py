"""The VmTemplate spec's string rules (greenops/models/strings.py) read alike by the three engines
that apply them: Python's ``re`` (the models, the render settings), OPA's RE2 (admission, with the
shipped bundle's data) and helm's JSON Schema validator (the chart's schema, which Krateo turns into
the CRD). Then the real admission path: a hostile string is refused before the scheduler is asked.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from greenops.charts import stage_chart
from greenops.models.strings import RULES
from greenops.policies.bundle import stage
from tests.policies.test_opa_integration import admit, review, vmtemplate
from tests.support.common import SSH_KEY as KEY
from tests.support.common import require_tool

pytestmark = pytest.mark.tools

# Per field: values the rule takes and values it refuses (the engines must agree on every one).
CORPUS: dict[str, list[str]] = {
    "vmName": ["vm-1", "a", "v" * 40, "v" * 41, "Vm", "1vm", "vm-", "vm_1", "vm.1"],
    "tenant": ["team-a", "Team_A.1", "t" * 63, "t" * 64, "-a", "a-", "a b", "ä"],
    "namespace": ["greenops", "0ns", "n" * 63, "n" * 64, "Ns", "ns_1", "ns."],
    "originRegion": ["westeurope", "eu-west-3", "europe-west9", "West", "eu west", "r" * 64],
    "schedulingLocation": ["westeurope", "eu-west-3", "EU", "eu_west"],
    "schedulingTime": ["2030-01-01T00:00:00Z", "2030-01-01T00:00:00.5+02:00", "2030-01-01", "2030-01-01T00:00:00"],
    "deadline": ["2030-01-01T00:00:00Z", "2030-01-01 00:00:00Z", "tomorrow"],
    "vmSize": ["Standard_E2as_v4", "e2-standard-4", "c6a.xlarge", "-x", "a b", "s" * 65],
    "adminUsername": ["greenops", "_svc", "ops-1", "a" * 32, "a" * 33, "root", "admin", "Ops", "1ops", "o.ps"],
    "sshPublicKey": [
        KEY,
        "ssh-rsa AAAAB3NzaC1yc2E=",
        "ecdsa-sha2-nistp521 AAAA me@host: {x}",
        "ssh-dss AAAA",
        "ssh-ed25519",
        "ssh-ed25519 AAAA\tx",
        "ssh-ed25519 AAAA=x",
        "ssh-ed25519 AAAA " + "c" * 8200,
    ],
    "gcpProject": ["greenops-test", "abcdef", "p" * 30, "p" * 31, "abcde", "my-proj-", "My-proj", "9project"],
    "azureSubscriptionId": ["11111111-2222-3333-4444-555555555555", "11111111-2222-3333-4444-55555555555", "x"],
    "azureResourceGroup": ["greenops-workloads", "rg(1)_a.b", "r" * 90, "r" * 91, "rg.", "rg/ml", "rg ml"],
}
# Every field also gets its first valid value with a line break or a control character added.
for _field, _values in CORPUS.items():
    _values += [_values[0] + "\n", _values[0] + "\nx: y", "\n" + _values[0], _values[0] + "\x00", ""]


def cases() -> list[tuple[str, str]]:
    return [(f, v) for f in RULES for v in CORPUS[f]]


def test_the_corpus_covers_every_rule_both_ways():
    for field, rule in RULES.items():
        verdicts = {rule.problem(v) is None for v in CORPUS[field]}
        assert verdicts == {True, False}, field


@pytest.fixture(scope="module")
def opa_refusals(tmp_path_factory) -> set[int]:
    """The indexes of cases() that OPA's spec_fields.problem refuses, with the shipped bundle's rules."""
    bundle = stage(tmp_path_factory.mktemp("bundle"))
    query = (
        "{i | some i; c := input.cases[i]; data.greenops.spec_fields.problem(c[1], data.greenops.string_rules[c[0]])}"
    )
    result = subprocess.run(
        [require_tool("opa"), "eval", "-b", str(bundle), "-I", "-f", "json", query],
        input=json.dumps({"cases": cases()}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout)["result"][0]["expressions"][0]["value"])


def test_python_and_opa_read_every_rule_alike(opa_refusals):
    python = {i for i, (f, v) in enumerate(cases()) if RULES[f].problem(v) is not None}
    assert {cases()[i] for i in python ^ opa_refusals} == set()


def test_python_and_helms_schema_read_every_rule_alike(tmp_path):
    chart = stage_chart(tmp_path)
    base = {"vmName": "vm-1", "cpu": 1, "memory": 1, "duration": "1h", "deadline": "2030-01-01T00:00:00Z"}
    base["maxLatency"] = 2000
    disagree = []
    for field, value in cases():
        result = subprocess.run(
            [require_tool("helm"), "template", "t", str(chart), "-n", "greenops", "-f", "-"],
            input=json.dumps(dict(base, **{field: value})),
            capture_output=True,
            text=True,
            timeout=60,
        )
        schema_refused = f"at '/{field}'" in result.stderr
        if schema_refused != (RULES[field].problem(value) is not None):
            disagree.append((field, value, result.stderr[-300:]))
    assert disagree == []


# --- the real admission path ------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize(
    "field,value,says",
    [
        ("adminUsername", "root", 'spec.adminUsername: "root" is reserved by Azure for a VM\'s administrator'),
        ("adminUsername", "ops\nkind: Secret", 'spec.adminUsername: "ops\\nkind: Secret" is not valid: a Linux user'),
        ("sshPublicKey", KEY + "\n---\nkind: Secret", "spec.sshPublicKey: "),
        ("gcpProject", "Prod", 'spec.gcpProject: "Prod" is not valid: a GCP project id'),
        ("vmName", "vm-1\nextra: x", 'spec.vmName: "vm-1\\nextra: x" is not valid'),
        ("namespace", "kube-system", 'spec.namespace: "kube-system" is not this VmTemplate\'s namespace "greenops"'),
    ],
)
def test_admission_refuses_a_hostile_string_before_booking(webhook, scheduler, field, value, says):
    asked = len(scheduler.requests)
    answer = admit(webhook, review(obj=vmtemplate(**{field: value})))["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 403
    assert answer["status"]["message"].startswith(f"VmTemplate greenops/vm-1: {says}"), answer["status"]["message"]
    assert len(scheduler.requests) == asked  # nothing was booked


@pytest.mark.integration
def test_admission_takes_the_objects_own_namespace(webhook, scheduler):
    answer = admit(webhook, review(obj=vmtemplate(namespace="greenops", adminUsername="ops")))["response"]
    assert answer["allowed"], answer
