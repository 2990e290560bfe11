"""A run that has ended has its objects deleted without waiting for the garbage collector.

pulumi-kubernetes deletes in the foreground unless an object says otherwise; the API server then
keeps each object, with a ``foregroundDeletion`` finalizer, until the controller manager's garbage
collector lifts it. This API server runs without one, so a foreground delete never finishes: the
retiring pass would hang. GreenWorkload marks its objects for background deletion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.engine import automation
from greenops.local.controlplane import LocalControlPlane
from greenops.local.webhook import namespace_manifest
from tests.e2e.test_aws_security_group import ack_objects
from tests.support import loopback
from tests.support.cluster_stacks import cluster_stack
from tests.support.common import require_tool
from tests.support.engine import iso

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def bare_cluster():
    for tool in ("etcd", "kube-apiserver", "opa", "pulumi"):
        require_tool(tool)
    with (
        LocalControlPlane(with_controller_manager=False) as cp,
        loopback.servers({"capacity_vcpu": 64}) as (sched, opa),
    ):
        with cp.client() as k:
            k.post("/api/v1/namespaces", json=namespace_manifest("greenops", None)).raise_for_status()
        yield {"cp": cp, "scheduler": sched, "opa": opa}


@pytest.mark.timeout(300)
def test_a_finished_run_is_retired_without_a_garbage_collector(bare_cluster, tmp_path):
    cp, now = bare_cluster["cp"], datetime.now(UTC).replace(microsecond=0)
    workload = {
        "name": "short",
        "cpu": 2,
        "memory": 4,
        "duration": "1h",
        "deadline": iso(now + timedelta(hours=2)),
        "originRegion": "ca-central-1",
        "eligibleProviders": ["aws"],
        "region": "ca-central-1",
    }
    # no operator runs: a run counts from when its objects are applied
    render = {"skipAwait": True, "namespace": "greenops"}
    st, reconcile = cluster_stack(bare_cluster, tmp_path, "bare", [workload], render, now, readiness="applied")

    def row_at(at: datetime) -> dict:
        reconcile(at)
        return {r["workload"]: r for r in automation.placements(st)}["short"]

    # No destroy at the end: the CRD stubs the program installed would be deleted in the foreground,
    # which this cluster cannot finish; it is thrown away with the module.
    assert row_at(now)["phase"] == "Running"
    applied = ack_objects(cp)
    assert {n for objs in applied.values() for n in objs} == {"short-vpc", "short-subnet", "short-sg"}
    assert all(
        o["metadata"]["annotations"]["pulumi.com/deletionPropagationPolicy"] == "background"
        for objs in applied.values()
        for o in objs.values()
    )

    # Two hours on the run is over: the pass deletes the objects, and returns.
    assert row_at(now + timedelta(hours=2))["phase"] == "Completed"
    assert all(objs == {} for objs in ack_objects(cp).values())
