"""A run that has ended has its objects deleted without waiting for the garbage collector.

pulumi-kubernetes deletes in the foreground unless an object says otherwise; the API server then
keeps each object, with a ``foregroundDeletion`` finalizer, until the controller manager's garbage
collector lifts it. This API server runs without one, so a foreground delete never finishes: the
retiring pass would hang. GreenWorkload marks its objects for background deletion."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from greenops.common.toolpaths import REPO
from greenops.engine import automation
from greenops.local.controlplane import LocalControlPlane
from greenops.local.webhook import namespace_manifest
from tests import loopback
from tests.conftest import require_tool
from tests.e2e.test_aws_security_group import ack_objects
from tests.engine import iso

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
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    shutil.copy2(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "stacks" / "Pulumi.bare.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "greenops:workloads": [workload],
                    "greenops:endpoints": {
                        "opaUrl": bare_cluster["opa"].url,
                        "schedulerUrl": bare_cluster["scheduler"].url,
                    },
                    # no operator runs: a run counts from when its objects are applied
                    "greenops:kubernetes": {"mode": "cluster", "installCrdStubs": True, "readiness": "applied"},
                    "greenops:render": {"skipAwait": True, "namespace": "greenops"},
                }
            }
        )
    )
    (tmp_path / "state").mkdir()
    st = automation.stack(
        "bare", work_dir=project, env={"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "GREENOPS_NOW": iso(now)}
    )
    st.set_config("greenops:kubeconfig", automation.auto.ConfigValue(cp.kubeconfig_path.read_text(), secret=True))
    loopback.set_secrets(
        st, loopback.stack_secrets(bare_cluster["scheduler"], bare_cluster["opa"], loopback.tenants_of([workload]))
    )

    def row_at(at: datetime) -> dict:
        st.workspace.env_vars["GREENOPS_NOW"] = iso(at)
        automation.run(st, "up", stream=False)
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
