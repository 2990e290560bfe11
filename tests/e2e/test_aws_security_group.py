"""The AWS set through the real engine and API server: ACK's Instance takes its security group by id
only, so the first pass applies the VPC, Subnet and SecurityGroup, and the Instance follows, with
the group attached, once the controller reports the group's id. No ACK controller runs here, so
the test writes the status it would."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from greenops.engine import automation
from tests.support.cluster_stacks import cluster_stack
from tests.support.engine import iso, unchanged
from tests.support.references import GROUP_ID

pytestmark = pytest.mark.e2e
API = "/apis/ec2.services.k8s.aws/v1alpha1/namespaces/greenops"
PLURALS = ("vpcs", "subnets", "securitygroups", "instances")


def ack_objects(cp) -> dict[str, dict[str, dict]]:
    with cp.client() as k:
        out = {}
        for plural in PLURALS:
            r = k.get(f"{API}/{plural}")
            for _ in range(30):  # a CRD just installed answers 429 while its storage initialises
                if r.status_code != 429:
                    break
                time.sleep(1)
                r = k.get(f"{API}/{plural}")
            assert r.status_code in (200, 404), r.text
            out[plural] = {} if r.status_code == 404 else {i["metadata"]["name"]: i for i in r.json()["items"]}
        return out


def act_as_ack(cp, plural: str, name: str, status: dict) -> None:
    """What the ACK controller writes (the stub CRD keeps status in the object)."""
    with cp.client() as k:
        r = k.patch(
            f"{API}/{plural}/{name}", json={"status": status}, headers={"Content-Type": "application/merge-patch+json"}
        )
        assert r.status_code == 200, r.text


def test_the_instance_follows_its_security_group_and_attaches_it(cluster, tmp_path):
    cp = cluster["cp"]
    now = datetime.now(UTC).replace(microsecond=0)
    name = "sg-bound"
    workload = {
        "name": name,
        "cpu": 2,
        "memory": 4,
        "duration": "2h",
        "deadline": iso(now + timedelta(hours=3)),
        "originRegion": "ca-central-1",
        "eligibleProviders": ["aws"],
        "region": "ca-central-1",
        "tenant": "e2e",
    }
    st, up_at = cluster_stack(cluster, tmp_path, "aws", [workload], {"skipAwait": True, "namespace": "greenops"}, now)

    def reconcile(at: datetime) -> dict:
        up_at(at)
        return {r["workload"]: r for r in automation.placements(st)}[name]

    try:
        # Due now: the gate opens; the group exists, the Instance waits for its id.
        row = reconcile(now)
        assert row["phase"] == "Provisioning" and row["provider"] == "aws", row
        objs = ack_objects(cp)
        assert set(objs["securitygroups"]) == {f"{name}-sg"} and objs["instances"] == {}, objs
        assert unchanged(st.preview(color="never").change_summary)  # nothing to do until the id comes

        # The controller has created the group: the next pass applies the Instance, attached by id.
        act_as_ack(cp, "securitygroups", f"{name}-sg", {"id": GROUP_ID})
        row = reconcile(now + timedelta(minutes=2))
        instance = ack_objects(cp)["instances"][name]
        assert instance["spec"]["securityGroupIDs"] == [GROUP_ID]
        assert instance["spec"]["subnetRef"] == {"from": {"name": f"{name}-subnet"}}
        assert row["phase"] == "Provisioning", row

        # The group's status blinks (a re-sync clears it): the Instance stays, with the recorded id.
        act_as_ack(cp, "securitygroups", f"{name}-sg", {"id": None})
        assert unchanged(st.preview(color="never").change_summary)
        row = reconcile(now + timedelta(minutes=3))
        assert ack_objects(cp)["instances"][name]["spec"]["securityGroupIDs"] == [GROUP_ID]

        # The controller reports the Instance synced: Running.
        act_as_ack(
            cp,
            "instances",
            name,
            {
                "conditions": [
                    {
                        "type": "ACK.ResourceSynced",
                        "status": "True",
                        "lastTransitionTime": iso(now + timedelta(minutes=4)),
                    }
                ]
            },
        )
        row = reconcile(now + timedelta(minutes=5))
        assert row["phase"] == "Running" and row["runningSince"] == iso(now + timedelta(minutes=4)), row
    finally:
        automation.run(st, "destroy", stream=False)
    assert all(not v for v in ack_objects(cp).values())
