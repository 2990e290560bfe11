"""Placement through the real Pulumi engine: the dynamic provider is serialised and runs in its own
process, against the real OPA and scheduler, with the Kubernetes provider rendering to a folder.
The clock is injected (GREENOPS_NOW) and stepped the way unattended reconciles would see it."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from greenops.engine import automation
from greenops.engine.reconcile_stack import lifecycle_changes
from greenops.insight import report
from tests.support import loopback
from tests.support.engine import (
    at,
    at_once,
    engine_stack,
    iso,
    patient_job,
    render_mode_config,
    rendered_workloads,
    small_job,
    unchanged,
)

pytestmark = [pytest.mark.tools, pytest.mark.integration]


def test_up_gate_second_up_clock_and_destroy(tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    out = tmp_path / "rendered"
    workloads = [
        # must start now: its deadline leaves two minutes of slack
        small_job("urgent", iso(now + timedelta(hours=2, minutes=2)), duration="2h", dataResidency="eu"),
        patient_job(now),
    ]
    with loopback.servers() as (scheduler, opa):
        stack = engine_stack(
            tmp_path,
            "engine",
            now,
            render_mode_config(
                opa.url, scheduler.url, out, workloads=workloads, endpoints={"provisioningLeadSeconds": 300}
            ),
            secrets=loopback.stack_secrets(scheduler, opa, loopback.tenants_of(workloads)),
        )
        try:
            up = stack.up()
            rows = {r["workload"]: r for r in up.outputs["placements"].value}
            assert rows["urgent"]["phase"] == "Running"
            assert rows["patient"]["provider"] == "gcp" and rows["patient"]["region"] == workloads[1]["region"]
            running = {n for n, r in rows.items() if r["phase"] == "Running"}
            assert rendered_workloads(out) == running  # nothing exists before its start time

            again = stack.preview()
            assert unchanged(again.change_summary), again.change_summary

            # A pass at each start, then one past both runs: everything due has run and is retired.
            patient_start = at(rows["patient"]["start"])
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(patient_start)
            stack.up()
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(
                max(patient_start + timedelta(hours=1), now + timedelta(hours=3))
            )
            later = stack.up()
            rows = {r["workload"]: r for r in later.outputs["placements"].value}
            assert {r["phase"] for r in rows.values()} == {"Completed"}
            assert rendered_workloads(out) == set()
            assert rows["urgent"]["start"] == up.outputs["placements"].value[0]["start"]  # decisions stay stable
        finally:
            stack.destroy()
            stack.workspace.remove_stack("engine")


def test_lifecycle_over_simulated_hours(tmp_path):
    """Three workloads pinned to one flat zone with 4 vCPU per zone-hour, added one pass at a time
    so the scheduler's answers are known: `first` runs now, `second` after it, `third` (1 h, tight
    deadline) after that. The clock then skips the passes that would have opened `second` and `third`."""
    from pulumi import automation as auto

    t0 = datetime.now(UTC).replace(microsecond=0)
    quebec = {
        "cpu": 4,
        "memory": 8,
        "originRegion": "canadaeast",
        "eligibleProviders": ["azure"],
        "region": "canadaeast",
        "tenant": "batch",
    }
    workloads = [
        dict(quebec, name="first", duration="2h", deadline=iso(t0 + timedelta(hours=10))),
        dict(quebec, name="second", duration="2h", deadline=iso(t0 + timedelta(hours=10))),
        dict(quebec, name="third", duration="1h", deadline=iso(t0 + timedelta(hours=6))),
    ]
    out = tmp_path / "rendered"
    with loopback.servers({"capacity_vcpu": 4}) as (scheduler, opa):
        stack = engine_stack(
            tmp_path,
            "lifecycle",
            t0,
            render_mode_config(
                opa.url, scheduler.url, out, workloads=workloads[:1], endpoints={"provisioningLeadSeconds": 300}
            ),
            secrets=loopback.stack_secrets(scheduler, opa, loopback.tenants_of(workloads)),
        )
        history: list[tuple[datetime, dict]] = []

        def reconcile(now: datetime) -> dict[str, dict]:
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(now)
            before = {r["workload"]: r for r in automation.placements(stack)}
            stack.up()
            rows = {r["workload"]: r for r in automation.placements(stack)}
            history.append((now, rows))
            # only what is Provisioning or Running has objects, at every pass
            assert rendered_workloads(out) == {n for n, r in rows.items() if r["phase"] in ("Provisioning", "Running")}
            print("\n".join(lifecycle_changes(before, rows)))
            return rows

        try:
            for n in (2, 3):  # one more workload per pass: placed in a known order
                reconcile(t0)
                stack.set_config("greenops:workloads", auto.ConfigValue(json.dumps(workloads[:n])))
            rows = reconcile(t0)
            assert rows["first"]["phase"] == "Running" and rows["first"]["runningSince"] == iso(t0)
            s2, s3 = at(rows["second"]["start"]), at(rows["third"]["start"])
            assert rows["second"]["phase"] == rows["third"]["phase"] == "Scheduled"
            assert t0 + timedelta(hours=2) <= s2 and s2 + timedelta(hours=2) <= s3 <= t0 + timedelta(hours=5)

            # No pass between `second`'s gate and 30 min after its start: missed, with room -> re-placed from then.
            late = s2 + timedelta(minutes=30)
            assert late < s3 - timedelta(minutes=5), "the test expects third's gate after second's"
            rows = reconcile(late)
            assert rows["first"]["phase"] == "Completed" and rows["first"]["completedAt"] == iso(late)
            second = rows["second"]
            assert second["replacements"] == 1 and at(second["start"]) >= late
            assert any(
                e["reason"].startswith("re-placed: missed its window")
                and f"no reconcile ran until {iso(late)}" in e["reason"]
                for e in second["events"]
            )
            assert not second["runningSince"]

            # `third` is missed too, and its deadline leaves no room any more: Failed, with the reason.
            past = t0 + timedelta(hours=5, minutes=1)
            assert past > s3
            rows = reconcile(past)
            assert rows["third"]["phase"] == "Failed"
            assert f"the deadline {iso(t0 + timedelta(hours=6))} leaves no room for 1h" in rows["third"]["reason"]

            # `second` runs from the pass at its new start, for its whole duration.
            s2_new = at(rows["second"]["start"])
            if rows["second"]["phase"] == "Scheduled":
                rows = reconcile(max(s2_new - timedelta(minutes=5), past))
            assert rows["second"]["phase"] == "Running"
            since = at(rows["second"]["runningSince"])
            rows = reconcile(since + timedelta(hours=2) - timedelta(minutes=1))
            assert rows["second"]["phase"] == "Running"

            # A clock stepped back by an NTP correction reopens nothing and changes nothing.
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(since - timedelta(hours=3))
            assert unchanged(stack.preview().change_summary)

            # Two reconciles at once: the stack lock lets one through, the other is told so.
            stack.workspace.env_vars["GREENOPS_NOW"] = iso(since + timedelta(hours=2))
            outcomes = at_once(lambda: automation.run(stack, "up", stream=False) and "ran")
            assert all(isinstance(o, str) and (o == "ran" or "being updated by another run" in o) for o in outcomes), (
                outcomes
            )
            if "ran" not in outcomes:  # the file backend's lock can turn both away; the next pass runs it
                automation.run(stack, "up", stream=False)
            rows = {r["workload"]: r for r in automation.placements(stack)}
            assert rows["second"]["phase"] == "Completed"
            assert rows["second"]["completedAt"] == iso(since + timedelta(hours=2))

            # Nothing skipped, nothing repeated: each placement attempt went through its phases once, in order.
            for name, row in rows.items():
                phases = [e["phase"] for e in row["events"]]
                attempts = " ".join(phases).split("Scheduled")[1:]
                for attempt in attempts[:-1]:
                    assert attempt.split() == [], f"{name}: an earlier attempt did more than wait: {phases}"
                assert attempts[-1].split() in (
                    [],
                    ["Failed"],
                    ["Provisioning", "Running"],
                    ["Provisioning", "Running", "Completed"],
                ), f"{name}: {phases}"

            # The report counts what ran, never the missed run.
            accounted = {r["workload"]: r for r in report.account(list(rows.values()))}
            assert accounted["third"]["saving_g"] is None and accounted["first"]["expected_g"] is not None
            text = report.table(list(accounted.values()))
            assert "failed: third (nothing counted)" in text and "over 2 workloads" in text
        finally:
            stack.destroy()
            stack.workspace.remove_stack("lifecycle")


def test_a_runs_completion_token_is_a_secret_in_the_state(tmp_path):
    """Through the real engine, with a completion URL and a secret env: the run's objects carry its
    report (and so a completion token) and its secret in their user-data, and the state holds either
    only encrypted."""
    now = datetime.now(UTC).replace(microsecond=0)
    out = tmp_path / "rendered"
    job = small_job(
        "reporting",
        iso(now + timedelta(hours=1, minutes=2)),
        dataResidency="eu",
        eligibleProviders=["gcp"],  # Config Connector takes the user-data as text
        run={"script": "#!/bin/sh\ntrue\n", "env": [{"name": "DB_PASSWORD", "secret": "db"}]},
    )
    password = "s3cr3t-'quoted' $value"
    with loopback.servers() as (scheduler, opa):
        stack = engine_stack(
            tmp_path,
            "reports",
            now,
            render_mode_config(
                opa.url, scheduler.url, out, workloads=[job], endpoints={"completionUrl": scheduler.url}
            ),
            secrets={
                **loopback.stack_secrets(scheduler, opa, loopback.tenants_of([job])),
                "runSecrets": json.dumps({"db": password, "unused": "not-passed-on"}),
            },
        )
        try:
            up = stack.up()
            [row] = up.outputs["placements"].value
            assert row["phase"] == "Running"
            rendered = "\n".join(f.read_text() for f in (out / "1-manifest").glob("*.yaml"))
            assert "reporting" in rendered_workloads(out)
            # the objects carry it, in the user-data: the VM needs it; and the run's env, from its secret
            assert "path: /var/lib/greenops/report.sh" in rendered
            assert "path: /var/lib/greenops/run.env" in rendered
            value = base64.b64encode(password.encode()).decode()
            env_file = base64.b64encode(
                f"export DB_PASSWORD=\"$(printf %s '{value}' | base64 -d)\"\n".encode()
            ).decode()
            assert env_file in rendered
            # the state as the backend stores it (an export shows secrets decrypted)
            [stored] = (tmp_path / "state" / ".pulumi" / "stacks").rglob("reports.json")
            state = stored.read_text()
            report = base64.b64encode(b"/var/lib/greenops/report.sh").decode()[:24]
            assert "gor_" not in state and "report.sh" not in state and report not in state  # encrypted only
            assert password not in state and value not in state and env_file not in state
            assert "not-passed-on" not in rendered
            assert '"ciphertext"' in state  # how the backend stores a secret value
        finally:
            stack.destroy()
            stack.workspace.remove_stack("reports")


def test_a_workload_with_no_room_waits_pending_and_the_update_succeeds(tmp_path):
    """One flat zone of 4 vCPU: `first` must run now and fills it; `second` has no window before its
    deadline while `first` holds the zone. `pulumi up` succeeds with `second` Pending (in the queue,
    nothing rendered); once `first` leaves the stack (its delete releases the zone), the queue admits
    `second` and the next pass places it from that booking."""
    from pulumi import automation as auto

    t0 = datetime.now(UTC).replace(microsecond=0)
    quebec = {
        "cpu": 4,
        "memory": 8,
        "originRegion": "canadaeast",
        "eligibleProviders": ["azure"],
        "region": "canadaeast",
        "tenant": "batch",
        "duration": "2h",
    }
    workloads = [
        dict(quebec, name="first", deadline=iso(t0 + timedelta(hours=2, minutes=5))),
        dict(quebec, name="second", deadline=iso(t0 + timedelta(hours=2, minutes=50))),
    ]
    out = tmp_path / "rendered"
    with loopback.servers({"capacity_vcpu": 4, "env": {"GREENOPS_SCHEDULER_QUEUE_SECONDS": "0"}}) as (scheduler, opa):
        stack = engine_stack(
            tmp_path,
            "queued",
            t0,
            render_mode_config(opa.url, scheduler.url, out, workloads=workloads[:1]),
            secrets=loopback.stack_secrets(scheduler, opa, loopback.tenants_of(workloads)),
        )
        try:
            stack.up()
            stack.set_config("greenops:workloads", auto.ConfigValue(json.dumps(workloads)))
            stack.up()  # succeeds: `second` waits
            rows = {r["workload"]: r for r in automation.placements(stack)}
            assert rows["first"]["phase"] == "Running"
            second = rows["second"]
            assert second["phase"] == "Pending" and second["provider"] is None, second
            assert "waiting in the scheduler's queue at position 1" in second["reason"], second["reason"]
            assert rendered_workloads(out) == {"first"}

            stack.set_config("greenops:workloads", auto.ConfigValue(json.dumps(workloads[1:])))
            stack.up()  # `first` is deleted (released): the queue admits `second` ...
            stack.up()  # ... and this pass places it from the admission's booking
            rows = {r["workload"]: r for r in automation.placements(stack)}
            assert rows["second"]["phase"] in ("Scheduled", "Running"), rows["second"]
            assert rows["second"]["region"] == "canadaeast"
        finally:
            stack.destroy()
            stack.workspace.remove_stack("queued")
