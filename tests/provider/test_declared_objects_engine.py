"""A waiting workload carries no ConfigGroup (greenops.placing.declared), through the real engine,
OPA and scheduler: it comes into being before the gate, holds the VM's objects while the run lasts,
and is gone once the run has completed; a stack made when every workload had one upgrades by
deleting the empty ones, and nothing is replaced."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.placing import declared
from tests.support import loopback
from tests.support.engine import at, engine_stack, iso, patient_job, render_mode_config, rendered_workloads, small_job

pytestmark = [pytest.mark.tools, pytest.mark.integration]
GROUP = "kubernetes:yaml/v2:ConfigGroup"
LEAD = {"provisioningLeadSeconds": 300}


def groups(stack) -> set[str]:
    """The workloads whose ConfigGroup is in the stack's state."""
    resources = stack.export_stack().deployment["resources"]
    return {r["urn"].rsplit("::", 1)[1].removesuffix("-vm") for r in resources if r["type"] == GROUP}


def render_stack(tmp_path, name: str, now: datetime, workloads: list[dict], scheduler, opa):
    """The workloads' stack in render mode, with the credentials Placement presents."""
    config = render_mode_config(opa.url, scheduler.url, tmp_path / "rendered", workloads=workloads, endpoints=LEAD)
    secrets = loopback.stack_secrets(scheduler, opa, loopback.tenants_of(workloads))
    return engine_stack(tmp_path, name, now, config, secrets=secrets)


def test_a_waiting_workload_has_no_config_group_until_its_gate_nears(tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    out = tmp_path / "rendered"
    # must start now: its deadline leaves two minutes of slack
    workloads = [
        small_job("urgent", iso(now + timedelta(hours=2, minutes=2)), duration="2h", dataResidency="eu"),
        patient_job(now),
    ]
    with loopback.servers() as (scheduler, opa):
        stack = render_stack(tmp_path, "declared", now, workloads, scheduler, opa)
        try:
            rows = {r["workload"]: r for r in stack.up().outputs["placements"].value}
            assert rows["urgent"]["phase"] == "Running" and rows["patient"]["phase"] == "Scheduled"
            gate = at(rows["patient"]["nextChangeAt"])
            assert gate > now + declared.DECLARED_AHEAD, "the test needs a gate beyond the declared-ahead margin"
            assert groups(stack) == {"urgent"}  # the first pass: only what runs has objects

            # A pass before the margin declares no group for it; one inside it declares the (still
            # empty) group. (urgent runs on, or has completed by then: its own business.)
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(gate - declared.DECLARED_AHEAD - timedelta(minutes=1))
            stack.up()
            assert "patient" not in groups(stack)
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(gate - timedelta(minutes=2))
            stack.up()
            assert "patient" in groups(stack) and "patient" not in rendered_workloads(out)

            # The gate: the objects are applied in that pass.
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(gate)
            rows = {r["workload"]: r for r in stack.up().outputs["placements"].value}
            assert rows["patient"]["phase"] == "Running" and rows["patient"]["gateOpenedAt"] == iso(gate)
            assert "patient" in rendered_workloads(out)

            # Past both runs: the pass that records Completed deletes the objects, the next the groups.
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(max(gate + timedelta(hours=2), now + timedelta(hours=3)))
            rows = {r["workload"]: r for r in stack.up().outputs["placements"].value}
            assert {r["phase"] for r in rows.values()} == {"Completed"} and rendered_workloads(out) == set()
            stack.up()
            assert groups(stack) == set()
        finally:
            stack.destroy()
            stack.workspace.remove_stack("declared")


def test_a_stack_made_when_every_workload_had_a_group_upgrades_without_a_replacement(tmp_path, monkeypatch):
    """The program before this change declared a ConfigGroup for every workload. Its stack, passed
    to today's program: the waiting workload's empty group is deleted, every Placement stays."""
    now = datetime.now(UTC).replace(microsecond=0)
    workloads = [patient_job(now)]
    with loopback.servers() as (scheduler, opa):
        stack = render_stack(tmp_path, "upgrade", now, workloads, scheduler, opa)
        try:
            with monkeypatch.context() as earlier:  # (the inline program runs in this process)
                earlier.setattr("greenops.stack.program.objects_declared", lambda *_: True)
                stack.up()
            assert groups(stack) == {"patient"}
            placement_before = [
                r for r in stack.export_stack().deployment["resources"] if r["type"] == "pulumi-python:dynamic:Resource"
            ]

            preview = stack.preview(diff=True)
            assert preview.change_summary.get("delete") == 1 and not preview.change_summary.get("replace")
            assert not {"create", "update", "replace"} & set(preview.change_summary), preview.change_summary
            stack.up()
            assert groups(stack) == set()
            placement_after = [
                r for r in stack.export_stack().deployment["resources"] if r["type"] == "pulumi-python:dynamic:Resource"
            ]
            assert [(r["urn"], r["id"], r["outputs"]["decision"]) for r in placement_after] == [
                (r["urn"], r["id"], r["outputs"]["decision"]) for r in placement_before
            ]
        finally:
            stack.destroy()
            stack.workspace.remove_stack("upgrade")
