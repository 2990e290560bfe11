"""The vm-template chart against a hostile tenant, rendered by the real helm.

Every string a VmTemplate spec carries reaches the chart as a value. Each one is tried with a line
break and extra keys, a quote, a template, a YAML document separator: the schema (which Krateo turns
into the CRD) refuses each, naming the field; and with the schema switched off the templates still
render either nothing, a refusal naming the VmTemplate, or exactly the objects and fields of the
clean render (the value kept whole as data). Then: two tenants with the same vmName share no
object, and a namespace value cannot move the objects.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from greenops.charts.schema import SCHEMA_FILE, render, values_schema
from greenops.models.strings import RULES
from tests.charts.test_vm_template_chart import (
    KEY,
    NAMESPACE,
    chart,  # noqa: F401  (the module's chart fixture)
    helm_run,
    helm_template,
    started,
    stem_of,
    values,
)

pytestmark = pytest.mark.tools

DECISIONS = {
    "azure": {"provider": "azure", "schedulingLocation": "westeurope", "vmSize": "Standard_F4s_v2"},
    "gcp": {"provider": "gcp", "schedulingLocation": "europe-west1", "vmSize": "e2-standard-4"},
    "aws": {"provider": "aws", "schedulingLocation": "eu-west-3", "vmSize": "c6a.xlarge"},
}
# What a hostile value appends to a valid one.
PAYLOADS = {
    "newline-extra-key": "\nextra: injected",
    "newline-nested-key": '\n  hostPath: "/"',
    "quote": '" injected: "x',
    "single-quote": "' injected: 'x",
    "template": "{{ .Release.Namespace }}",
    "document": "\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen",
    "flow-mapping": "}, injected: {",
    "colon-space": ": injected",
}
# A valid value of every string field (the payload is appended to it).
VALID = {
    "vmName": "parity",
    "tenant": "team-a",
    "namespace": NAMESPACE,
    "originRegion": "westeurope",
    "deadline": "2030-01-01T00:00:00Z",
    "adminUsername": "greenops",
    "sshPublicKey": KEY,
    "gcpProject": "greenops-test",
    "azureSubscriptionId": "11111111-2222-3333-4444-555555555555",
    "azureResourceGroup": "greenops-workloads",
    "duration": "2h",
}
# The decision's fields are set by admission, yet a tenant may send them too.
DECISION_FIELDS = ("provider", "schedulingLocation", "schedulingTime", "vmSize")
FIELDS = sorted(set(VALID) | set(DECISION_FIELDS))


def decided(provider: str, **over: Any) -> dict:
    return values(**DECISIONS[provider], schedulingTime=started(), gcpProject="greenops-test", **over)


def valid_value(field: str, clean: dict) -> str:
    return clean[field] if field in clean else VALID[field]


def shape(node: Any) -> Any:
    """The objects' structure: every key, every list length, every leaf's type (not its value)."""
    if isinstance(node, dict):
        return {k: shape(v) for k, v in node.items()}
    if isinstance(node, list):
        return [shape(v) for v in node]
    return type(node).__name__


def leaves(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [x for v in node.values() for x in leaves(v)]
    if isinstance(node, list):
        return [x for v in node for x in leaves(v)]
    return [node]


def test_the_committed_schema_is_the_generated_one():
    """values.schema.json ships in the chart (and becomes the CRD): regenerate it with
    ``python -m greenops.charts.schema`` when greenops/models/strings.py changes."""
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render()
    schema = values_schema()["properties"]
    for field, rule in RULES.items():
        assert field in schema, f"rule {field} has no chart value"
        assert (schema[field]["pattern"], schema[field]["maxLength"]) == (rule.pattern, rule.max_length)
    # every string value of the chart is bounded
    for field, prop in schema.items():
        if "string" in (prop.get("type") if isinstance(prop.get("type"), list) else [prop.get("type")]):
            assert "maxLength" in prop or "enum" in prop, field


def assert_inert(chart, result, clean: dict, field: str, payload: str) -> None:  # noqa: F811
    """A successful render with the hostile value: nothing, or exactly the clean render's objects,
    keys and list lengths, differing only in strings that carry the injected text whole."""
    assert result.returncode == 0, result.stderr
    expected = helm_template(chart, clean)
    got = [d for d in yaml.safe_load_all(result.stdout) if d]
    if got == []:  # a provider or start time that is not one: nothing is due
        assert field in ("provider", "schedulingTime"), result.stdout
        return
    assert shape(got) == shape(expected), result.stdout
    assert all(o["metadata"]["namespace"] == NAMESPACE for o in got)
    # GCP labels lower the value; the rest keep it as it is
    changed = [(g, e) for g, e in zip(leaves(got), leaves(expected), strict=True) if g != e]
    assert all(isinstance(g, str) and PAYLOADS[payload].lower() in g.lower() for g, _ in changed), changed


@pytest.mark.parametrize("provider", sorted(DECISIONS))
@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@pytest.mark.parametrize("field", FIELDS)
def test_an_injection_through_any_string_field_is_refused_or_inert(chart, field, payload, provider):  # noqa: F811
    """Refused by the schema, naming the field (duration's form is in the schema too, from the
    workload contract); only what the rules allow (an SSH key's comment takes quotes, braces and
    ": ") renders, and inert."""
    clean = decided(provider)
    hostile = dict(clean, **{field: valid_value(field, clean) + PAYLOADS[payload]})
    result = helm_run(chart, hostile)
    if result.returncode == 0:
        assert field == "sshPublicKey" and "\n" not in PAYLOADS[payload], result.stdout
        assert_inert(chart, result, clean, field, payload)
    else:
        assert result.stdout == "" and f"at '/{field}'" in result.stderr, result.stderr


@pytest.mark.parametrize("provider", sorted(DECISIONS))
@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@pytest.mark.parametrize("field", FIELDS)
def test_without_the_schema_an_injection_renders_inert_or_is_refused(chart, field, payload, provider):  # noqa: F811
    """What the templates do on their own (a CRD generated without some pattern, a value set by
    hand): never an extra object, key or line; the value is kept whole or refused."""
    clean = decided(provider)
    value = valid_value(field, clean) + PAYLOADS[payload]
    result = helm_run(chart, dict(clean, **{field: value}), extra=["--skip-schema-validation"])
    if result.returncode != 0:  # a template refused it, naming the VmTemplate, and nothing rendered
        assert result.stdout == "" and "VmTemplate " in result.stderr, result.stderr
    else:
        assert_inert(chart, result, clean, field, payload)


def test_two_tenants_with_the_same_vmname_share_no_object(chart):  # noqa: F811
    """Namespace team-a and team-b each have a VmTemplate train (vmName train): the objects land in
    each one's own namespace, and their names (which ASO and Config Connector also give the Azure VM
    in the shared resource group and the GCP instance in the shared project) differ."""
    for provider in DECISIONS:
        sets = {
            ns: helm_template(chart, decided(provider, vmName="train"), namespace=ns, release="train")
            for ns in ("team-a", "team-b")
        }
        names = {ns: {(o["kind"], o["metadata"]["name"]) for o in objs} for ns, objs in sets.items()}
        assert names["team-a"] and names["team-a"].isdisjoint(names["team-b"])
        for ns, objs in sets.items():
            assert {o["metadata"]["namespace"] for o in objs} == {ns}
            assert all(o["metadata"]["name"].startswith(stem_of("train", ns, "train")) for o in objs)
        # two VmTemplates of one namespace with the same vmName do not collide either
        other = helm_template(chart, decided(provider, vmName="train"), namespace="team-a", release="train-2")
        assert names["team-a"].isdisjoint({(o["kind"], o["metadata"]["name"]) for o in other})


def test_names_stay_within_the_providers_limits(chart):  # noqa: F811
    """The longest vmName (40) with the hash and the longest suffix: GCP's 63 (RFC 1035 label),
    Azure's 64 for a VNet and a Linux computer name."""
    longest = "v" * 40
    for provider in DECISIONS:
        objs = helm_template(chart, decided(provider, vmName=longest))
        assert objs
        for o in objs:
            assert len(o["metadata"]["name"]) <= 63, o["metadata"]["name"]
    vm = next(o for o in helm_template(chart, decided("azure", vmName=longest)) if o["kind"] == "VirtualMachine")
    assert len(vm["spec"]["osProfile"]["computerName"]) <= 64


def test_a_namespace_value_cannot_move_the_objects(chart):  # noqa: F811
    same = helm_template(chart, decided("gcp", namespace=NAMESPACE))
    assert {o["metadata"]["namespace"] for o in same} == {NAMESPACE}
    result = helm_run(chart, decided("gcp", namespace="kube-system"))
    assert result.returncode != 0 and result.stdout == ""
    assert (
        f'VmTemplate {NAMESPACE}/t: namespace "kube-system" is not the VmTemplate\'s own namespace "{NAMESPACE}": '
        "its objects are always created in its own namespace (remove namespace)"
    ) in result.stderr


def test_reserved_admin_names_are_refused_by_the_schema(chart):  # noqa: F811
    for name in ("root", "admin", "administrator"):
        result = helm_run(chart, decided("azure", adminUsername=name))
        assert result.returncode != 0 and "at '/adminUsername'" in result.stderr, result.stderr
    assert helm_template(chart, decided("azure", adminUsername="ops_1"))


def test_the_schema_accepts_every_key_form(chart):  # noqa: F811
    for key in (
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ== me@host",
        "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY=",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    ):
        [vm] = [o for o in helm_template(chart, decided("azure", sshPublicKey=key)) if o["kind"] == "VirtualMachine"]
        assert vm["spec"]["osProfile"]["linuxConfiguration"]["ssh"]["publicKeys"][0]["keyData"] == key
    assert json.loads(render())  # the generated text is JSON
