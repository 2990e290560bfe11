"""What counts as an edit by hand (greenops.placing.observe.drift_of): a declared leaf of the spec or
of the labels that the cluster holds otherwise; fields only the cluster set are not; values that may
carry the run's script or a credential are never shown."""

from __future__ import annotations

from greenops.placing.observe import drift_of

DECLARED = {
    "kind": "VirtualMachine",
    "metadata": {"name": "etl", "labels": {"greenops.io/workload": "etl"}},
    "spec": {
        "hardwareProfile": {"vmSize": "Standard_D4as_v4"},
        "osProfile": {"customData": "c2VjcmV0IHNjcmlwdA==", "adminUsername": "greenops"},
        "networkProfile": {"networkInterfaces": [{"reference": {"name": "etl-nic"}}]},
    },
}


def live(**spec) -> dict:
    return {
        "kind": "VirtualMachine",
        "metadata": {"name": "etl", "labels": {"greenops.io/workload": "etl", "added-by": "pulumi"}},
        "spec": {**DECLARED["spec"], "location": "westeurope", **spec},
    }


def test_fields_the_cluster_added_are_not_drift():
    assert drift_of(DECLARED, live()) == []


def test_a_declared_value_changed_is_named_with_both_values():
    got = drift_of(DECLARED, live(hardwareProfile={"vmSize": "Standard_E64s_v5"}))
    assert got == ["VirtualMachine etl: spec.hardwareProfile.vmSize is 'Standard_E64s_v5', declared 'Standard_D4as_v4'"]
    removed = {**live(), "metadata": {"name": "etl", "labels": {}}}
    assert drift_of(DECLARED, removed) == [
        "VirtualMachine etl: metadata.labels.greenops.io/workload is absent, declared 'etl'"
    ]
    nic = live(networkProfile={"networkInterfaces": [{"reference": {"name": "other"}}]})
    assert drift_of(DECLARED, nic) == [
        "VirtualMachine etl: spec.networkProfile.networkInterfaces[0].reference.name is 'other', declared 'etl-nic'"
    ]


def test_a_value_that_may_hold_a_script_or_credential_is_never_shown():
    got = drift_of(DECLARED, live(osProfile={"customData": "ZXZpbA==", "adminUsername": "greenops"}))
    assert got == [
        "VirtualMachine etl: spec.osProfile.customData is another value (not shown), declared another value (not shown)"
    ]
    assert "ZXZpbA" not in got[0] and "c2VjcmV0" not in got[0]
