"""The records a direct pass declares from: read from an exported state, judged at an instant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import stamp
from greenops.direct.records import COMPONENT_TYPE, PLACEMENT_TYPE, record_of, records_in_state, verdict
from greenops.models import Workload
from greenops.placing.lifecycle import Lifecycle, Phase
from greenops.stack.stack_config import StackConfigError, parse_stack_config

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)
SPEC = {
    "name": "etl",
    "cpu": 2,
    "memory": 4,
    "duration": "1h",
    "deadline": "2030-01-02T00:00:00Z",
    "originRegion": "westeurope",
    "eligibleProviders": ["aws"],
}


@pytest.fixture
def placed(decide):
    w = Workload.model_validate(SPEC, context={"check_deadline": False})
    decision = decide(w, "aws", "eu-north-1", at=NOW)
    running = (
        Lifecycle.placed(NOW - timedelta(hours=1), "placed")
        .to(Phase.PROVISIONING, NOW - timedelta(minutes=5), "gate", gate_opened_at=NOW - timedelta(minutes=5))
        .to(Phase.RUNNING, NOW, "running", running_since=NOW)
    )
    # as the state holds it: every number a float
    workload = {**w.spec(), "cpu": 2.0, "memory": 4.0}
    return w, {"workload": workload, "decision": decision.document(), "lifecycle": running.document()}


def deployment(outputs: dict, machine: dict | None, vm_ids: list[str], provisioning: str = "direct") -> dict:
    component = "urn:pulumi:s::p::greenops:index:GreenWorkload::etl"
    return {
        "resources": [
            {"urn": component, "type": COMPONENT_TYPE, "outputs": {"machine": machine or {}}},
            {
                "urn": component + "$pulumi-python:dynamic:Resource::etl-placement",
                "type": PLACEMENT_TYPE,
                "parent": component,
                "id": "greenvm-etl",
                "outputs": {**outputs, "provisioning": provisioning},
            },
            *({"urn": f"{component}$aws:ec2/instance:Instance::etl", "type": "x", "id": i} for i in vm_ids),
        ]
    }


def test_the_state_record_has_the_vm_and_the_spec_as_the_model_writes_it(placed):
    w, outputs = placed
    vm = {"resourceId": "i-1", "privateIp": "10.0.1.5", "since": stamp(NOW)}
    records = records_in_state(deployment(outputs, vm, ["i-1"]))
    assert records["etl"]["machine"] == vm
    v = verdict(w, records["etl"], timedelta(minutes=5), NOW + timedelta(minutes=30))
    assert v.declared and v.basis == outputs["lifecycle"]  # the float spec is this spec


def test_a_vm_gone_from_the_state_is_recorded_gone_and_not_declared(placed):
    w, outputs = placed
    vm = {"resourceId": "i-1", "privateIp": "10.0.1.5", "since": stamp(NOW)}
    records = records_in_state(deployment(outputs, vm, []))
    assert records["etl"]["machine"] == {"gone": "i-1"}
    assert not verdict(w, records["etl"], timedelta(minutes=5), NOW + timedelta(minutes=30)).declared


def test_operator_placements_and_ones_that_no_longer_validate_are_no_records(placed):
    _, outputs = placed
    assert records_in_state(deployment(outputs, None, [], provisioning="operator")) == {}
    stale = {**outputs, "workload": {**outputs["workload"], "originRegion": "atlantis-1"}}
    assert record_of(stale) is None
    assert records_in_state(deployment(stale, None, [])) == {}


def test_the_instant_is_whole_seconds_as_the_placement_reads_it(placed):
    w, outputs = placed
    v = verdict(w, record_of(outputs).model_dump(), timedelta(minutes=5), NOW + timedelta(microseconds=700_000))
    assert v.at == NOW and v.props()["at"] == stamp(NOW)


def test_missing_direct_settings_are_refused_with_the_key():
    base = {k: v for k, v in SPEC.items() if k != "eligibleProviders"}
    with pytest.raises(StackConfigError) as err:
        parse_stack_config({"provisioning": "direct", "workloads": [dict(base, eligibleProviders=["gcp", "aws"])]})
    assert str(err.value) == (
        "greenops:render.gcpProject: workload 'etl' is provisioned directly and may be placed on gcp, "
        "whose direct set needs it"
    )
    # the same workload kept on the operator, or limited to AWS, needs nothing more
    parse_stack_config({"provisioning": "direct", "workloads": [dict(base, eligibleProviders=["aws"])]})
    parse_stack_config({"workloads": [dict(base, eligibleProviders=["gcp"])]})
    with pytest.raises(StackConfigError, match="is not a provisioning mode: choose operator or direct"):
        parse_stack_config({"provisioning": "drect"})
