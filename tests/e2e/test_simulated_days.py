"""Three simulated days of unattended reconciliation: the real engine (Automation API, file
backend, render mode), the real OPA and scheduler on loopback, and `GREENOPS_NOW` stepped from
one next-change instant to the next, as `greenops reconcile --watch` sleeps, plus plain interval
ticks. `make simulate` runs it and prints the timeline."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from greenops.engine import automation
from greenops.engine.reconcile_stack import WAKE_MARGIN, reconcile_once
from greenops.insight import report
from greenops.local.demo import next_evening
from greenops.models.duration import parse_duration
from tests.support import loopback
from tests.support.engine import at, at_once, engine_stack, iso, render_mode_config, rendered_workloads

pytestmark = [pytest.mark.tools, pytest.mark.integration]
INTERVAL, MARGIN = 300, 60  # greenops:reconcile: the lead defaults to their sum
LEAD = timedelta(seconds=INTERVAL + MARGIN)
# Single-zone regions with an hourly profile, so each workload's honest answer is often to wait.
REGIONS = ["germanywestcentral", "uksouth", "francecentral", "westus", "eastus"]
DURATIONS = ["1h", "2h", "90m", "3h", "4h", "30m", "6h"]


def workload(i: int, t0: datetime, name: str | None = None) -> dict:
    region = REGIONS[i % len(REGIONS)]
    slack_h = [4, 10, 20, 30, 44, 60][i % 6]
    return {
        "name": name or f"job-{i:02d}",
        "cpu": 2 + 2 * (i % 3),
        "memory": 4 + 4 * (i % 2),
        "duration": DURATIONS[i % len(DURATIONS)],
        "deadline": iso(t0 + timedelta(hours=slack_h + 6)),
        "originRegion": region,
        "eligibleProviders": ["azure"],
        "region": region,
        "tenant": f"team-{i % 4}",
    }


def test_three_simulated_days(tmp_path):
    from pulumi import automation as auto

    # The hour of day decides which workloads wait (hourly profiles), so the simulated days start at a
    # fixed hour, the demo's evening, rather than at the next hour: a run starting at 17:xx UTC found
    # no two still waiting after the second day's noon, and failed.
    t0 = next_evening(datetime.now(UTC))
    end = t0 + timedelta(days=3)
    initial = [workload(i, t0) for i in range(16)]
    # two arrive on day 2, two on day 3 (their deadlines reach into day 4)
    added_later = [workload(i, t0 + timedelta(days=1 + (i - 16) // 2), f"late-{i:02d}") for i in range(16, 20)]
    arrivals = {t0 + timedelta(days=1): added_later[:2], t0 + timedelta(days=2): added_later[2:]}
    departure = t0 + timedelta(days=1, hours=12)
    out = tmp_path / "rendered"
    with loopback.servers() as (scheduler, opa):
        st = engine_stack(
            tmp_path,
            "days",
            t0,
            render_mode_config(
                opa.url,
                scheduler.url,
                out,
                workloads=initial,
                reconcile={"intervalSeconds": INTERVAL, "provisioningMarginSeconds": MARGIN},
            ),
            secrets=loopback.stack_secrets(scheduler, opa, loopback.tenants_of(initial + added_later)),
        )

        def declare(workloads: list[dict]) -> None:
            st.set_config("greenops:workloads", auto.ConfigValue(json.dumps(workloads)))

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
                waiting = [n for n, r in sorted(passes[-1][1].items()) if r["phase"] == "Scheduled"]
                if now >= departure and not removed and len(waiting) >= 2:
                    # two workloads still waiting are withdrawn, at the first pass from the second
                    # day's noon that has two (how many wait then depends on the hour the test starts)
                    removed = waiting[:2]
                    declared = [w for w in declared if w["name"] not in removed]
                    declare(declared)
                if len(passes) == 12:  # two reconciles started at the same moment
                    outcomes = at_once(lambda now=now: reconcile(now))
                    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
                    assert all(not isinstance(o, str) or "being updated by another run" in o for o in outcomes), (
                        outcomes
                    )
                    ran = [o for o in outcomes if not isinstance(o, str)]
                    assert len(ran) <= 1 or ran[0].changes == [] or ran[1].changes == [], "a pass ran twice"
                    # the file backend's lock can turn both away: the loop's next wake-up runs it then
                    result = ran[0] if ran else reconcile(now)
                else:
                    result = reconcile(now)
        finally:
            final = {r["workload"]: r for r in automation.placements(st)}
            st.destroy()
            st.workspace.remove_stack("days")

    print(f"\n{len(passes)} passes over {(passes[-1][0] - t0)} of simulated time")
    print(
        f"{'workload':10} {'region':20} {'planned start':20} {'gate opened':20} {'ran from':20} {'retired':20} deadline"
    )
    for name, r in sorted(final.items(), key=lambda kv: kv[1]["start"]):
        spec = next(w for w in initial + added_later if w["name"] == name)
        print(
            f"{name:10} {r['region']:20} {r['start']:20} {r['gateOpenedAt'] or '-':20} {r['runningSince'] or '-':20} "
            f"{r['completedAt'] or '-':20} {spec['deadline']}"
        )

    assert (
        passes[-1][0] == end
        and len(removed) == 2
        and set(final) == {w["name"] for w in initial + added_later} - set(removed)
    )
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
            assert (
                at(r["start"]) - LEAD
                <= now
                < at(r["runningSince"])
                + parse_duration(next(w for w in initial + added_later if w["name"] == n)["duration"])
            ), (n, now)
        assert not rendered & set(removed)
    # the report's saving is the sum over the runs
    accounted = report.account(list(final.values()))
    text = report.table(accounted)
    total = sum(r["baseline_g"] - r["expected_g"] for r in accounted)
    assert "completed: " in text and f"(saving {total:.1f} g" in text and f"over {len(final)} workloads" in text
