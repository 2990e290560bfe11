"""Each operator's verdict, read from its own conditions (ASO, Config Connector, ACK)."""

from __future__ import annotations

from greenops.renderers import object_state, vm_kind


def obj(*conditions: dict) -> dict:
    return {"status": {"conditions": list(conditions)}}


def test_the_vm_kind_of_each_provider():
    assert (vm_kind("azure"), vm_kind("gcp"), vm_kind("aws")) == ("VirtualMachine", "ComputeInstance", "Instance")


def test_aso_ready_and_severity():
    assert object_state("azure", {}).ready is False
    ok = object_state("azure", obj({"type": "Ready", "status": "True", "lastTransitionTime": "2027-01-01T00:00:00Z"}))
    assert ok.ready and ok.since == "2027-01-01T00:00:00Z" and ok.failure is None
    retrying = object_state(
        "azure", obj({"type": "Ready", "status": "False", "severity": "Warning", "reason": "X", "message": "throttled"})
    )
    assert not retrying.ready and retrying.failure is None and retrying.detail == "Ready=False (Warning, X): throttled"
    fatal = object_state(
        "azure",
        obj(
            {
                "type": "Ready",
                "status": "False",
                "severity": "Error",
                "reason": "BadRequest",
                "message": "SkuNotAvailable",
            }
        ),
    )
    assert fatal.failure == "Ready=False (Error, BadRequest): SkuNotAvailable"


def test_config_connector_never_terminal():
    assert object_state("gcp", obj({"type": "Ready", "status": "True"})).ready
    failing = object_state(
        "gcp", obj({"type": "Ready", "status": "False", "reason": "UpdateFailed", "message": "quota"})
    )
    assert not failing.ready and failing.failure is None and "UpdateFailed" in failing.detail


def test_ack_synced_and_terminal():
    assert object_state("aws", obj({"type": "ACK.ResourceSynced", "status": "True"})).ready
    assert not object_state("aws", obj({"type": "ACK.ResourceSynced", "status": "False"})).ready
    terminal = object_state(
        "aws",
        obj(
            {"type": "ACK.ResourceSynced", "status": "False"},
            {"type": "ACK.Terminal", "status": "True", "message": "InvalidAMIID.NotFound"},
        ),
    )
    assert terminal.failure == "ACK.Terminal=True: InvalidAMIID.NotFound" and not terminal.ready
