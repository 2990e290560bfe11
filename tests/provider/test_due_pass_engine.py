"""A pass of the due workloads (``greenops reconcile --due``, the watch loop between its beats),
through the real engine, OPA and scheduler: it registers and targets only what is due, the engine
keeps every other resource, the stack's rows stay whole, and a full pass afterwards finds nothing
left to do."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.errors import GreenOpsError
from greenops.engine.reconcile_stack import reconcile_once
from greenops.placing.due import DUE_AHEAD
from tests.support import loopback
from tests.support.engine import (
    at,
    engine_stack,
    iso,
    patient_job,
    render_mode_config,
    small_job,
    unchanged,
)

pytestmark = [pytest.mark.tools, pytest.mark.integration]


def waiting(name: str, now: datetime, **fields) -> dict:
    """A job that waits, in another region than the patient one's, so its gate is another."""
    return {**patient_job(now), "name": name, "region": "europe-north1", "originRegion": "swedencentral", **fields}


def rows_of(stack) -> dict[str, dict]:
    return {r["workload"]: r for r in stack.outputs()["placements"].value}


def urns(stack) -> set[str]:
    return {r["urn"] for r in stack.export_stack().deployment["resources"]}


def test_a_due_pass_touches_only_the_due_workloads_and_a_full_pass_then_finds_nothing_to_do(tmp_path):
    from pulumi import automation as auto

    now = datetime.now(UTC).replace(microsecond=0)
    declared = [
        small_job("urgent", iso(now + timedelta(hours=2, minutes=2)), duration="2h", dataResidency="eu"),
        patient_job(now),
        waiting("edited", now),
        waiting("withdrawn", now),
    ]
    with loopback.servers() as (scheduler, opa):
        config = render_mode_config(
            opa.url,
            scheduler.url,
            tmp_path / "rendered",
            workloads=declared,
            endpoints={"provisioningLeadSeconds": 300},
        )
        tenants = loopback.tenants_of([*declared, waiting("newcomer", now)])
        stack = engine_stack(tmp_path, "due", now, config, secrets=loopback.stack_secrets(scheduler, opa, tenants))
        try:
            stack.up()
            first = rows_of(stack)
            assert first["urgent"]["phase"] == "Running" and first["patient"]["phase"] == "Scheduled"
            assert all(r["spec"] for r in first.values()), "every row carries its declaration's digest"
            updates = len(stack.history())

            # Nothing due: no update at all, and the rows are what they were.
            idle = reconcile_once(stack, due_only=True)
            assert idle.counts == "nothing due, no update" and not idle.due
            assert len(stack.history()) == updates and rows_of(stack) == first

            # A clock that cannot be read: the pass is refused with its reason, before any update.
            clock = tmp_path / "clock"
            clock.write_text("yesterday", encoding="utf-8")
            fixed = stack.workspace.env_vars.pop("GREENOPS_NOW")
            stack.workspace.env_vars["GREENOPS_CLOCK_FILE"] = str(clock)
            with pytest.raises(GreenOpsError, match=r"stack due: cannot tell which workloads are due: .*yesterday"):
                reconcile_once(stack, due_only=True)
            del stack.workspace.env_vars["GREENOPS_CLOCK_FILE"]
            stack.workspace.env_vars["GREENOPS_NOW"] = fixed
            assert len(stack.history()) == updates and rows_of(stack) == first

            # The earliest next change: only the workloads due then are registered; the rest stay as they were.
            t = min(at(r["nextChangeAt"]) for r in first.values() if r["nextChangeAt"])
            expected = {n for n, r in first.items() if r["nextChangeAt"] and at(r["nextChangeAt"]) <= t + DUE_AHEAD}
            assert 0 < len(expected) < len(first), f"the test needs some workloads not due at {iso(t)}: {first}"
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(t)
            before = urns(stack)
            opened = reconcile_once(stack, due_only=True)
            assert opened.due is not None and opened.due.declared == dict.fromkeys(expected, "next change reached")
            assert opened.due.removed == {}
            rows = rows_of(stack)
            assert list(rows) == list(first), "every workload keeps its row, in the stack's order"
            assert {k: v for k, v in rows.items() if k not in expected} == {
                k: v for k, v in first.items() if k not in expected
            }
            assert rows != first and opened.entries, "the due workloads moved on"
            gone = {u for u in before - urns(stack) if not any(f"::{n}" in u or f"/{n}" in u for n in expected)}
            assert not gone, gone

            # An edit, a newcomer and a withdrawal: each is due, and nothing else.
            changed = [declared[0], declared[1], waiting("edited", now, cpu=8), waiting("newcomer", now)]
            stack.set_config("greenops:workloads", auto.ConfigValue(json.dumps(changed)))
            before = rows
            edits = reconcile_once(stack, due_only=True)
            assert edits.due is not None
            assert edits.due.declared.items() >= {"edited": "declaration changed", "newcomer": "new"}.items()
            assert edits.due.removed == {"withdrawn": "no longer declared"}
            rows = rows_of(stack)
            assert list(rows) == ["urgent", "patient", "edited", "newcomer"]
            assert rows["edited"]["cpu"] == 8 and rows["newcomer"]["phase"] in ("Scheduled", "Running")
            assert not any(urn.endswith("::withdrawn") for urn in urns(stack)), "the withdrawn workload is deleted"
            untouched = {"urgent", "patient"} - set(edits.due.declared)
            assert {n: rows[n] for n in untouched} == {n: before[n] for n in untouched}

            # A re-placed workload that starts at once has its gate held for one pass (no objects were
            # declared for it): it stays due, and the next due pass opens it.
            follow = reconcile_once(stack, due_only=True)
            held = {n for n, r in rows.items() if r["phase"] == "Scheduled" and at(r["nextChangeAt"]) <= t}
            assert follow.due is not None and held <= set(follow.due.declared)

            # A full pass at the same instant: the due passes left what it would have left.
            rows = rows_of(stack)
            assert unchanged(stack.up().summary.resource_changes)
            assert rows_of(stack) == rows
        finally:
            stack.destroy()
            stack.workspace.remove_stack("due")
