"""The Pulumi path against the real API server: gated objects, a second up with no changes, the
clock advanced by `reconcile`, and destroy leaving nothing behind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.engine import automation
from tests.support.cluster_stacks import cluster_stack
from tests.support.common import AZURE_SUBSCRIPTION
from tests.support.common import SSH_KEY as KEY
from tests.support.engine import iso, unchanged

pytestmark = pytest.mark.e2e
KINDS = [
    ("compute.azure.com/v1api20220301", "virtualmachines"),
    ("network.azure.com/v1api20240301", "virtualnetworks"),
    ("network.azure.com/v1api20240301", "networkinterfaces"),
]


def vms_in_cluster(cp) -> dict[str, set[str]]:
    """Objects of the operators' kinds; a kind whose CRD is gone (after destroy) holds none."""
    out = {}
    with cp.client() as k:
        for api, plural in KINDS:
            r = k.get(f"/apis/{api}/namespaces/greenops/{plural}")
            out[plural] = set() if r.status_code == 404 else {i["metadata"]["name"] for i in r.json()["items"]}
    return out


def rows_of(st) -> dict[str, dict]:
    return {r["workload"]: r for r in automation.placements(st)}


def act_as_operator(cp, name: str, *conditions: dict) -> None:
    """What ASO would write: the VM object's status conditions (the stub CRD keeps status in the object)."""
    with cp.client() as k:
        r = k.patch(
            f"/apis/compute.azure.com/v1api20220301/namespaces/greenops/virtualmachines/{name}",
            json={"status": {"conditions": list(conditions)}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 200, r.text


def test_up_gate_operator_verdicts_reconcile_destroy(cluster, tmp_path, crd_schemas):
    # The operators' kinds are installed as scope stubs by the program (installCrdStubs): the
    # upstream ASO VirtualMachine CRD (1.7 MB) kept this API server busy for over ten minutes.
    # What lands in the cluster is then validated client-side against the real CRD schemas.
    # No operator runs here, so the test writes the conditions ASO would.
    cp = cluster["cp"]
    now = datetime.now(UTC).replace(microsecond=0)
    deadline = iso(now + timedelta(hours=10))
    # Both want Quebec (a flat profile) and the scheduler has 4 vCPU per zone-hour: one runs now,
    # the other must wait until the first is done.
    workloads = [
        {
            "name": n,
            "cpu": 4,
            "memory": 8,
            "duration": "2h",
            "deadline": deadline,
            "originRegion": "canadaeast",
            "eligibleProviders": ["azure"],
            "region": "canadaeast",
            "tenant": "e2e",
        }
        for n in ("first", "second")
    ]
    st, up_at = cluster_stack(
        cluster,
        tmp_path,
        "e2e",
        workloads,
        {"sshPublicKey": KEY, "skipAwait": True, "namespace": "greenops", "azureSubscriptionId": AZURE_SUBSCRIPTION},
        now,
    )

    def reconcile(at: datetime) -> dict[str, dict]:
        up_at(at)
        return rows_of(st)

    try:
        automation.run(st, "up", stream=False)
        rows = rows_of(st)
        first, second = sorted(rows, key=lambda n: rows[n]["start"])
        assert rows[first]["phase"] == "Provisioning" and rows[second]["phase"] == "Scheduled", rows
        assert not rows[first]["runningSince"] and rows[first]["gateOpenedAt"] == iso(now)
        assert vms_in_cluster(cp)["virtualmachines"] == {first}  # due ones exist, scheduled ones do not
        # what the API server stored is valid against the real upstream CRD schemas
        with cp.client() as k:
            for api, plural in KINDS:
                for item in k.get(f"/apis/{api}/namespaces/greenops/{plural}").json()["items"]:
                    obj = {
                        "apiVersion": item["apiVersion"],
                        "kind": item["kind"],
                        "spec": item["spec"],
                        "metadata": {"name": item["metadata"]["name"]},
                    }
                    assert crd_schemas.errors(obj) == []
            vm = k.get(f"/apis/compute.azure.com/v1api20220301/namespaces/greenops/virtualmachines/{first}").json()
        assert vm["spec"]["hardwareProfile"]["vmSize"] == rows[first]["size"]

        # Nothing reported yet: a second preview changes nothing.
        again = st.preview(color="never")
        assert unchanged(again.change_summary), again.change_summary

        # The operator is still working: Provisioning, with its words as the reason.
        act_as_operator(
            cp,
            first,
            {
                "type": "Ready",
                "status": "False",
                "severity": "Info",
                "reason": "Reconciling",
                "message": "The resource is in the process of being reconciled by the operator",
            },
        )
        rows = reconcile(now + timedelta(minutes=5))
        assert rows[first]["phase"] == "Provisioning" and "Ready=False (Info, Reconciling)" in rows[first]["reason"]

        # Ready=True: Running from the operator's transition time, not from the pass that saw it.
        ready_at = now + timedelta(minutes=7)
        act_as_operator(
            cp,
            first,
            {
                "type": "Ready",
                "status": "True",
                "severity": "",
                "reason": "Succeeded",
                "lastTransitionTime": iso(ready_at),
            },
        )
        rows = reconcile(now + timedelta(minutes=20))
        assert rows[first]["phase"] == "Running" and rows[first]["runningSince"] == iso(ready_at)
        assert rows[first]["drift"] == []

        # The running VM's size edited by hand: the next pass finds it, records it, and re-applies the
        # declared size (Pulumi's server-side apply takes the field back from the edit's manager).
        declared = rows[first]["size"]
        vm_path = f"/apis/compute.azure.com/v1api20220301/namespaces/greenops/virtualmachines/{first}"
        with cp.client() as k:
            r = k.patch(
                vm_path,
                json={"spec": {"hardwareProfile": {"vmSize": "Standard_E64s_v5"}}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert r.status_code == 200, r.text
        rows = reconcile(now + timedelta(minutes=25))
        assert rows[first]["phase"] == "Running"
        (seen,) = rows[first]["drift"]
        assert seen["restored"] and seen["found"] == [
            f"VirtualMachine {first}: spec.hardwareProfile.vmSize is 'Standard_E64s_v5', declared {declared!r}"
        ]
        with cp.client() as k:
            assert k.get(vm_path).json()["spec"]["hardwareProfile"]["vmSize"] == declared
        rows = reconcile(now + timedelta(minutes=26))  # restored: nothing more is found
        assert len(rows[first]["drift"]) == 1

        # The second gate opens at its start; the first, which came up late, still has its full 2 h.
        s2 = datetime.fromisoformat(rows[second]["start"].replace("Z", "+00:00"))
        rows = reconcile(s2)
        assert rows[second]["phase"] == "Provisioning"
        assert rows[first]["phase"] == ("Running" if s2 < ready_at + timedelta(hours=2) else "Completed")
        assert vms_in_cluster(cp)["virtualmachines"] == (
            {first, second} if rows[first]["phase"] == "Running" else {second}
        )

        # A terminal error from the operator: it would fail over, but its only eligible region is the
        # one that failed, so it is Failed with the operator's message and why, and its objects are removed.
        act_as_operator(
            cp,
            second,
            {
                "type": "Ready",
                "status": "False",
                "severity": "Error",
                "reason": "BadRequest",
                "message": "SkuNotAvailable: Standard_D4as_v4 is not available in canadaeast",
            },
        )
        rows = reconcile(s2 + timedelta(minutes=5))
        assert rows[second]["phase"] == "Failed"
        assert rows[second]["reason"].startswith(
            f"the operator reports a terminal error: VirtualMachine {second}: Ready=False "
            "(Error, BadRequest): SkuNotAvailable: Standard_D4as_v4 is not available in canadaeast; "
            "no room elsewhere: "
        )
        assert "it failed in before (azure/canadaeast)" in rows[second]["reason"], rows[second]["reason"]
        assert second not in vms_in_cluster(cp)["virtualmachines"]

        # A VM object deleted by hand while Running is reported Failed, never silently recreated.
        if rows[first]["phase"] == "Running":
            with cp.client() as k:
                r = k.delete(f"/apis/compute.azure.com/v1api20220301/namespaces/greenops/virtualmachines/{first}")
                assert r.status_code == 200, r.text
            # before its run's end (which may fall within minutes of the last pass, by the hour it was placed)
            rows = reconcile(min(s2 + timedelta(minutes=10), ready_at + timedelta(hours=2) - timedelta(seconds=1)))
            assert rows[first]["phase"] == "Failed"
            assert rows[first]["reason"].startswith(
                f"deleted outside the platform while Running: VirtualMachine {first}"
            )
            assert vms_in_cluster(cp) == {plural: set() for _, plural in KINDS}
    finally:
        automation.run(st, "destroy", stream=False)
        st.workspace.remove_stack("e2e")
    assert vms_in_cluster(cp) == {plural: set() for _, plural in KINDS}
