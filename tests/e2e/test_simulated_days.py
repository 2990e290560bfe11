"""Three simulated days of unattended reconciliation: the real engine (Automation API, file
backend, render mode), the real OPA and scheduler on loopback, and `GREENOPS_NOW` stepped from
one next-change instant to the next, as `greenops reconcile --watch` sleeps, plus plain interval
ticks. `make simulate` runs it and prints the timeline."""
from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from greenops import automation, report
from greenops.local.scheduler import SchedulerServer
from greenops.local.tools import TOOLS_BIN, pulumi_env
from greenops.models.duration import parse_duration
from greenops.policies.server import OpaServer
from greenops.reconcile import WAKE_MARGIN, reconcile_once
from tests.conftest import require_tool

pytestmark = [pytest.mark.tools, pytest.mark.integration]
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"
INTERVAL, MARGIN = 300, 60  # greenops:reconcile: the lead defaults to their sum
LEAD = timedelta(seconds=INTERVAL + MARGIN)
# Single-zone regions with an hourly profile, so each workload's honest answer is often to wait.
REGIONS = ["germanywestcentral", "uksouth", "francecentral", "westus", "eastus"]
DURATIONS = ["1h", "2h", "90m", "3h", "4h", "30m", "6h"]


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def at(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def workload(i: int, t0: datetime, name: str | None = None) -> dict:
    region = REGIONS[i % len(REGIONS)]
    slack_h = [4, 10, 20, 30, 44, 60][i % 6]
    return {"name": name or f"job-{i:02d}", "cpu": 2 + 2 * (i % 3), "memory": 4 + 4 * (i % 2),
            "duration": DURATIONS[i % len(DURATIONS)], "deadline": iso(t0 + timedelta(hours=slack_h + 6)),
            "originRegion": region, "eligibleProviders": ["azure"], "region": region, "tenant": f"team-{i % 4}"}


def rendered_workloads(folder: Path) -> set[str]:
    names = set()
    for f in (folder / "1-manifest").glob("*.yaml") if (folder / "1-manifest").exists() else []:
        for line in f.read_text().splitlines():
            if line.strip().startswith("greenops.io/workload:"):
                names.add(line.split(":", 1)[1].strip())
    return names


def test_three_simulated_days(tmp_path):
    for tool in ("pulumi", "opa", "pulumi-resource-kubernetes", "pulumi-resource-pulumi-python"):
        require_tool(tool)
    from pulumi import automation as auto

    from greenops import program

    t0 = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    end = t0 + timedelta(days=3)
    initial = [workload(i, t0) for i in range(16)]
    # two arrive on day 2, two on day 3 (their deadlines reach into day 4)
    added_later = [workload(i, t0 + timedelta(days=1 + (i - 16) // 2), f"late-{i:02d}") for i in range(16, 20)]
    arrivals = {t0 + timedelta(days=1): added_later[:2], t0 + timedelta(days=2): added_later[2:]}
    departure = t0 + timedelta(days=1, hours=12)
    out = tmp_path / "rendered"
    with SchedulerServer() as scheduler, OpaServer(scheduler_url=scheduler.url) as opa:
        (tmp_path / "state").mkdir()
        env = pulumi_env({"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "GREENOPS_NOW": iso(t0)})
        st = auto.create_or_select_stack(
            stack_name="days", project_name="greenops-platform", program=program.run,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(tmp_path), pulumi_home=env["PULUMI_HOME"], env_vars=env,
                pulumi_command=auto.PulumiCommand(root=str(TOOLS_BIN.parent)),
                project_settings=auto.ProjectSettings(name="greenops-platform", runtime="python")))

        def declare(workloads: list[dict]) -> None:
            st.set_config("greenops:workloads", auto.ConfigValue(json.dumps(workloads)))

        declare(initial)
        st.set_all_config({
            "greenops:endpoints": auto.ConfigValue(json.dumps({"opaUrl": opa.url, "schedulerUrl": scheduler.url})),
            "greenops:reconcile": auto.ConfigValue(json.dumps({"intervalSeconds": INTERVAL,
                                                               "provisioningMarginSeconds": MARGIN})),
            "greenops:kubernetes": auto.ConfigValue(json.dumps({"mode": "render", "renderDir": str(out)})),
            "greenops:render": auto.ConfigValue(json.dumps({"sshPublicKey": KEY, "skipAwait": True})),
        })
        passes: list[tuple[datetime, dict[str, dict], set[str]]] = []

        def reconcile(now: datetime):
            st.workspace.env_vars["GREENOPS_NOW"] = iso(now)
            result = reconcile_once(st)
            passes.append((now, {r["workload"]: r for r in result.rows}, rendered_workloads(out)))
            return result

        try:
            now, declared, removed = t0, list(initial), []
            # plain interval ticks, as a fixed beat would add, and the instants the declarations change
            stops = sorted([t0 + timedelta(hours=h) for h in (7, 31, 55, 71)] + list(arrivals) + [departure, end])
            result = reconcile(now)
            while now < end:
                wake = result.next_change[0] + WAKE_MARGIN if result.next_change else end
                now = min([wake] + [t for t in stops if t > now])
                for when, newcomers in arrivals.items():
                    if now == when:
                        declared = declared + newcomers
                        declare(declared)
                if now == departure:  # two workloads still waiting are withdrawn
                    rows = passes[-1][1]
                    removed = [n for n in sorted(rows) if rows[n]["phase"] == "Scheduled"][:2]
                    declared = [w for w in declared if w["name"] not in removed]
                    declare(declared)
                if len(passes) == 12:  # two reconciles started at the same moment
                    outcomes = []

                    def one(now=now) -> None:
                        try:
                            outcomes.append(reconcile(now))
                        except automation.StackLocked as exc:
                            outcomes.append(str(exc))

                    threads = [threading.Thread(target=one) for _ in range(2)]
                    for t in threads:
                        t.start()
                    for t in threads:
                        t.join()
                    assert any(not isinstance(o, str) for o in outcomes), outcomes
                    assert all(not isinstance(o, str) or "lock is held" in o for o in outcomes), outcomes
                    result = next(o for o in outcomes if not isinstance(o, str))
                else:
                    result = reconcile(now)
        finally:
            final = {r["workload"]: r for r in automation.placements(st)}
            st.destroy()
            st.workspace.remove_stack("days")

    print(f"\n{len(passes)} passes over {(passes[-1][0] - t0)} of simulated time")
    print(f"{'workload':10} {'region':20} {'planned start':20} {'gate opened':20} {'ran from':20} {'retired':20} deadline")
    for name, r in sorted(final.items(), key=lambda kv: kv[1]["start"]):
        spec = next(w for w in initial + added_later if w["name"] == name)
        print(f"{name:10} {r['region']:20} {r['start']:20} {r['gateOpenedAt'] or '-':20} {r['runningSince'] or '-':20} "
              f"{r['completedAt'] or '-':20} {spec['deadline']}")

    assert passes[-1][0] == end and len(removed) == 2 and set(final) == {w["name"] for w in initial + added_later} - set(removed)
    for name, r in final.items():
        spec = next(w for w in initial + added_later if w["name"] == name)
        start, duration = at(r["start"]), parse_duration(spec["duration"])
        # exactly once, never missed, for its full duration, within its deadline
        assert [e["phase"] for e in r["events"]] == ["Scheduled", "Provisioning", "Running", "Completed"], (name, r)
        assert not r["replacements"] and not any("missed" in e["reason"] for e in r["events"])
        ran = at(r["completedAt"]) - at(r["runningSince"])
        assert duration <= ran <= duration + 2 * WAKE_MARGIN, (name, ran)
        assert at(r["completedAt"]) <= at(spec["deadline"]) + 2 * WAKE_MARGIN
        # the gate opened when due: no earlier than the lead before the start, never after the start
        assert start - LEAD <= at(r["gateOpenedAt"]) <= start, (name, r["gateOpenedAt"], r["start"])
    # nothing provisioned outside its window, at any pass; removed workloads never had objects
    for now, rows, rendered in passes:
        live = {n for n, r in rows.items() if r["phase"] in ("Provisioning", "Running")}
        assert rendered == live, now
        for n in live:
            r = rows[n]
            assert at(r["start"]) - LEAD <= now < at(r["runningSince"]) + parse_duration(
                next(w for w in initial + added_later if w["name"] == n)["duration"]), (n, now)
        assert not rendered & set(removed)
    # the report's saving is the sum over the runs
    accounted = report.account(list(final.values()))
    text = report.table(accounted)
    total = sum(r["baseline_g"] - r["expected_g"] for r in accounted)
    assert f"completed: " in text and f"(saving {total:.1f} g" in text and f"over {len(final)} workloads" in text
