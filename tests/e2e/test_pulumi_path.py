"""The Pulumi path against the real API server: gated objects, a second up with no changes, the
clock advanced by `reconcile`, and destroy leaving nothing behind."""
from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from greenops import automation
from greenops.local.tools import REPO

pytestmark = pytest.mark.e2e
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"
KINDS = [("compute.azure.com/v1api20220301", "virtualmachines"), ("network.azure.com/v1api20240301", "virtualnetworks"),
         ("network.azure.com/v1api20240301", "networkinterfaces")]


def vms_in_cluster(cp) -> dict[str, set[str]]:
    """Objects of the operators' kinds; a kind whose CRD is gone (after destroy) holds none."""
    out = {}
    with cp.client() as k:
        for api, plural in KINDS:
            r = k.get(f"/apis/{api}/namespaces/greenops/{plural}")
            out[plural] = set() if r.status_code == 404 else {i["metadata"]["name"] for i in r.json()["items"]}
    return out


def test_up_gate_reconcile_destroy(cluster, tmp_path, crd_schemas):
    # The operators' kinds are installed as scope stubs by the program (installCrdStubs): the
    # upstream ASO VirtualMachine CRD (1.7 MB) kept this API server busy for over ten minutes.
    # What lands in the cluster is then validated client-side against the real CRD schemas.
    cp = cluster["cp"]
    now = datetime.now(timezone.utc).replace(microsecond=0)
    deadline = (now + timedelta(hours=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # Both want Quebec (a flat profile) and the scheduler has 4 vCPU per zone-hour: one runs now,
    # the other must wait until the first is done.
    workloads = [{"name": n, "cpu": 4, "memory": 8, "duration": "2h", "deadline": deadline, "originRegion": "canadaeast",
                  "eligibleProviders": ["azure"], "region": "canadaeast", "tenant": "e2e"} for n in ("first", "second")]
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy2(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "stacks").mkdir()
    (project / "stacks" / "Pulumi.e2e.yaml").write_text(yaml.safe_dump({"config": {
        "greenops:workloads": workloads,
        "greenops:endpoints": {"opaUrl": cluster["opa"].url, "schedulerUrl": cluster["scheduler"].url},
        "greenops:kubernetes": {"mode": "cluster", "installCrdStubs": True},
        "greenops:render": {"sshPublicKey": KEY, "skipAwait": True, "namespace": "greenops"},
    }}))
    (tmp_path / "state").mkdir()
    (tmp_path / "ca.pem").write_bytes(cluster["tls"].ca_pem)
    env = {"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "SSL_CERT_FILE": str(tmp_path / "ca.pem"),
           "GREENOPS_NOW": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    st = automation.stack("e2e", work_dir=project, env=env)
    st.set_config("greenops:kubeconfig", automation.auto.ConfigValue(cp.kubeconfig_path.read_text(), secret=True))
    try:
        automation.run(st, "up", stream=False)
        rows = {r["workload"]: r for r in automation.placements(st)}
        running = {n for n, r in rows.items() if r["status"] == "Running"}
        waiting = {n for n, r in rows.items() if r["status"] == "Scheduled"}
        assert len(running) == 1 and len(waiting) == 1, rows
        assert vms_in_cluster(cp)["virtualmachines"] == running  # due ones exist, scheduled ones do not
        # what the API server stored is valid against the real upstream CRD schemas
        with cp.client() as k:
            for api, plural in KINDS:
                for item in k.get(f"/apis/{api}/namespaces/greenops/{plural}").json()["items"]:
                    obj = {"apiVersion": item["apiVersion"], "kind": item["kind"], "spec": item["spec"],
                           "metadata": {"name": item["metadata"]["name"]}}
                    assert crd_schemas.errors(obj) == []
            vm = k.get(f"/apis/compute.azure.com/v1api20220301/namespaces/greenops/virtualmachines/{next(iter(running))}").json()
        assert vm["spec"]["hardwareProfile"]["vmSize"] == rows[next(iter(running))]["size"]

        again = st.preview(color="never")
        assert set(again.change_summary) == {"same"}, again.change_summary

        # Advance the clock to the second start: reconcile opens its gate and retires the first.
        later = datetime.fromisoformat(rows[next(iter(waiting))]["start"].replace("Z", "+00:00")) + timedelta(minutes=1)
        st.workspace.env_vars["GREENOPS_NOW"] = later.strftime("%Y-%m-%dT%H:%M:%SZ")
        automation.run(st, "up", stream=False)
        rows = {r["workload"]: r for r in automation.placements(st)}
        assert rows[next(iter(waiting))]["status"] == "Running" and rows[next(iter(running))]["status"] == "Completed"
        assert vms_in_cluster(cp)["virtualmachines"] == waiting
    finally:
        automation.run(st, "destroy", stream=False)
        st.workspace.remove_stack("e2e")
    assert vms_in_cluster(cp) == {plural: set() for _, plural in KINDS}
