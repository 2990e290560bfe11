"""GreenVm through the real Pulumi engine: the dynamic provider is serialised and runs in its own
process, against the real OPA and scheduler, with the Kubernetes provider rendering to a folder."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from greenops.local.scheduler import SchedulerServer
from greenops.local.tools import TOOLS_BIN, pulumi_env
from greenops.policies.server import OpaServer
from tests.conftest import require_tool

pytestmark = [pytest.mark.tools, pytest.mark.integration]
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def rendered_workloads(folder: Path) -> set[str]:
    names = set()
    for f in (folder / "1-manifest").glob("*.yaml") if (folder / "1-manifest").exists() else []:
        for line in f.read_text().splitlines():
            if line.strip().startswith("greenops.io/workload:"):
                names.add(line.split(":", 1)[1].strip())
    return names


def test_up_gate_second_up_clock_and_destroy(tmp_path):
    for tool in ("pulumi", "opa", "pulumi-resource-kubernetes", "pulumi-resource-pulumi-python"):
        require_tool(tool)
    from pulumi import automation as auto

    from greenops import program

    now = datetime.now(timezone.utc).replace(microsecond=0)
    out = tmp_path / "rendered"
    workloads = [
        # must start now: its deadline leaves two minutes of slack
        {"name": "urgent", "cpu": 2, "memory": 4, "duration": "2h", "deadline": iso(now + timedelta(hours=2, minutes=2)),
         "originRegion": "westeurope", "dataResidency": "eu", "tenant": "ops"},
        {"name": "patient", "cpu": 4, "memory": 8, "duration": "1h", "deadline": iso(now + timedelta(days=5)),
         "originRegion": "italynorth", "eligibleProviders": ["gcp"], "region": "europe-west9", "tenant": "ml"},
    ]
    with SchedulerServer() as scheduler, OpaServer(scheduler_url=scheduler.url) as opa:
        (tmp_path / "state").mkdir()
        env = pulumi_env({"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "GREENOPS_NOW": iso(now)})
        stack = auto.create_or_select_stack(
            stack_name="engine", project_name="greenops-platform", program=program.run,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(tmp_path), pulumi_home=env["PULUMI_HOME"], env_vars=env,
                pulumi_command=auto.PulumiCommand(root=str(TOOLS_BIN.parent)),
                project_settings=auto.ProjectSettings(name="greenops-platform", runtime="python")))
        stack.set_all_config({
            "greenops:workloads": auto.ConfigValue(json.dumps(workloads)),
            "greenops:endpoints": auto.ConfigValue(json.dumps({"opaUrl": opa.url, "schedulerUrl": scheduler.url,
                                                               "provisioningLeadSeconds": 300})),
            "greenops:kubernetes": auto.ConfigValue(json.dumps({"mode": "render", "renderDir": str(out)})),
            "greenops:render": auto.ConfigValue(json.dumps({"sshPublicKey": KEY, "skipAwait": True})),
        })
        try:
            up = stack.up()
            rows = {r["workload"]: r for r in up.outputs["placements"].value}
            assert rows["urgent"]["status"] == "Running"
            assert rows["patient"]["provider"] == "gcp" and rows["patient"]["region"] == "europe-west9"
            running = {n for n, r in rows.items() if r["status"] == "Running"}
            assert rendered_workloads(out) == running  # nothing exists before its start time

            again = stack.preview()
            assert set(again.change_summary) == {"same"}, again.change_summary

            # Advance the clock past both runs: everything due has run and is retired.
            patient_end = datetime.fromisoformat(rows["patient"]["start"].replace("Z", "+00:00")) + timedelta(hours=1)
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(max(patient_end, now + timedelta(hours=3)) + timedelta(minutes=1))
            later = stack.up()
            rows = {r["workload"]: r for r in later.outputs["placements"].value}
            assert {r["status"] for r in rows.values()} == {"Completed"}
            assert rendered_workloads(out) == set()
            assert rows["urgent"]["start"] == up.outputs["placements"].value[0]["start"]  # decisions stay stable
        finally:
            stack.destroy()
            stack.workspace.remove_stack("engine")
