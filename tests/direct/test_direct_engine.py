"""Direct mode through the real Pulumi engine, OPA and scheduler on loopback.

No cloud plugin or credentials are needed: the engine talks to tests/support/cloud_standin.py in the cloud
plugins' place: the real plugin protocol,
each input checked against the providers' published schema subsets, and a journal standing for
the cloud's inventory. Everything on our side (program, SDKs, preview, up, the Placement's steps,
the records a pass declares from) is the real thing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pulumi import automation as auto

from greenops.common.toolpaths import REPO, pulumi_env
from greenops.engine import automation
from tests.support import loopback
from tests.support.cloud_standin import JOURNAL_ENV, REFUSE_ENV, inventory, plugin_scripts
from tests.support.common import AZURE_SUBSCRIPTION
from tests.support.common import REGION_PER_CLOUD as REGIONS
from tests.support.engine import KEY, engine_stack, iso, render_mode_config, small_job

pytestmark = [pytest.mark.tools, pytest.mark.integration]

# How the engine's progress names each cloud's VM (module and type, without the file part)
SHOWN = {"aws": "aws:ec2:Instance", "gcp": "gcp:compute:Instance", "azure": "azure-native:compute:VirtualMachine"}
VM_TYPES = {
    "aws": "aws:ec2/instance:Instance",
    "gcp": "gcp:compute/instance:Instance",
    "azure": "azure-native:compute:VirtualMachine",
}


@pytest.fixture(scope="module")
def servers():
    with loopback.servers() as (scheduler, opa):
        yield opa, scheduler


def _stack(tmp_path, servers, clouds, now):
    """A direct-mode stack whose workloads (one per cloud, each due at once: a 1 h run with 2 min
    of slack) talk to the stand-in cloud; returns it and the cloud's journal."""
    opa, scheduler = servers
    deadline = iso(now + timedelta(hours=1, minutes=2))
    workloads = [small_job(f"{c}-job", deadline, eligibleProviders=[c], region=REGIONS[c]) for c in clouds]
    config = render_mode_config(
        opa.url,
        scheduler.url,
        tmp_path / "rendered",
        workloads=workloads,
        provisioning="direct",
        render={"sshPublicKey": KEY, "azureSubscriptionId": AZURE_SUBSCRIPTION, "gcpProject": "greenops-test"},
    )
    stack = engine_stack(tmp_path, "direct", now, config, loopback.stack_secrets(scheduler, opa, ["ops"]))
    journal = tmp_path / "cloud.jsonl"
    plugins = plugin_scripts(tmp_path / "plugins", REPO)
    stack.workspace.env_vars.update({"PATH": f"{plugins}:{pulumi_env()['PATH']}", JOURNAL_ENV: str(journal)})
    return stack, journal


def _rows(result) -> dict[str, dict]:
    return {r["workload"]: r for r in result.outputs["placements"].value}


def _at(stack, t: datetime) -> None:
    stack.workspace.env_vars["GREENOPS_NOW"] = iso(t)


def test_vm_previewed_created_and_retired_per_cloud(tmp_path, servers):
    now = datetime.now(UTC).replace(microsecond=0)
    stack, journal = _stack(tmp_path, servers, list(REGIONS), now)
    try:
        # Pass 1 places each workload: due at once, so the gate opens, but the VM waits for the record.
        rows = _rows(stack.up())
        assert {r["phase"] for r in rows.values()} == {"Provisioning"}, rows
        assert {r["nextChangeAt"] for r in rows.values()} == {iso(now)}  # the next pass is due at once
        assert inventory(journal) == {}

        # A preview now shows each cloud's VM, declared from the record; it creates nothing.
        _at(stack, now + timedelta(minutes=1))
        preview = stack.preview()
        for cloud, shown in SHOWN.items():
            assert f"+  {shown} {cloud}-job create" in preview.stdout, preview.stdout
        assert preview.change_summary.get("create", 0) >= 15  # 3 providers and 12 resources
        assert inventory(journal) == {}

        # The up creates exactly that; the next pass finds each VM there and counts its run from
        # the pass that created it.
        rows = _rows(stack.up())
        assert {r["phase"] for r in rows.values()} == {"Provisioning"}
        _at(stack, now + timedelta(minutes=2))
        rows = _rows(stack.up())
        cloud = inventory(journal)
        for c, vm_type in VM_TYPES.items():
            row = rows[f"{c}-job"]
            assert row["phase"] == "Running" and row["runningSince"] == iso(now + timedelta(minutes=1)), row
            assert row["provider"] == c and row["region"] == REGIONS[c]
            assert cloud[row["resourceId"]]["type"] == vm_type
            assert row["privateIp"].startswith("10.0.1.")
        assert sorted(e["type"] for e in cloud.values() if e["type"].startswith("aws:")) == sorted(
            ["aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/securityGroup:SecurityGroup", VM_TYPES["aws"]]
        )

        # Nothing moves until a run ends: no change, no new decision (the read is the record).
        assert set(stack.preview().change_summary) == {"same", "read"}

        # A pass after the hour retires every VM and its network.
        _at(stack, now + timedelta(hours=1, minutes=1))
        rows = _rows(stack.up())
        assert {r["phase"] for r in rows.values()} == {"Completed"}
        assert {r["resourceId"] for r in rows.values()} == {None}
        assert inventory(journal) == {}
    finally:
        stack.destroy()
        stack.workspace.remove_stack("direct")


def test_a_stale_record_changes_nothing_and_the_state_record_recovers(tmp_path, servers):
    """An update that fails after the Placement moved leaves the stack's outputs (the record `pulumi
    up` reads) behind the Placement's own. The next `pulumi up` must refuse rather than act on it;
    `greenops up`, which reads the record from the state, carries on."""
    now = datetime.now(UTC).replace(microsecond=0)
    stack, journal = _stack(tmp_path, servers, ["aws"], now)
    try:
        assert _rows(stack.up())["aws-job"]["phase"] == "Provisioning"

        # The cloud refuses the instance: the update fails after the Placement recorded its step.
        _at(stack, now + timedelta(minutes=1))
        stack.workspace.env_vars[REFUSE_ENV] = VM_TYPES["aws"]
        with pytest.raises(auto.CommandError, match="the cloud refused to create it"):
            stack.up()
        del stack.workspace.env_vars[REFUSE_ENV]
        before = inventory(journal)
        assert VM_TYPES["aws"] not in {e["type"] for e in before.values()}

        # The stack's outputs still say Provisioning: a pass from them is refused, and changes nothing.
        _at(stack, now + timedelta(minutes=2))
        with pytest.raises(auto.CommandError, match="run `greenops up` or `greenops reconcile` once"):
            stack.up()
        assert inventory(journal) == before

        # The Automation API reads the record from the state, and the instance is created; the run
        # counts from the pass that created it, not from the one the cloud refused.
        st = automation.stack("direct", work_dir=tmp_path, env=dict(stack.workspace.env_vars))
        row = _rows(automation.run(st, "up", stream=False))["aws-job"]
        assert row["phase"] == "Provisioning"
        assert inventory(journal)[row["resourceId"]]["type"] == VM_TYPES["aws"]
        st.workspace.env_vars["GREENOPS_NOW"] = iso(now + timedelta(minutes=3))
        row = _rows(automation.run(st, "up", stream=False))["aws-job"]
        assert row["phase"] == "Running" and row["runningSince"] == iso(now + timedelta(minutes=2))
    finally:
        stack.workspace.env_vars.pop(REFUSE_ENV, None)
        stack.destroy()
        stack.workspace.remove_stack("direct")
