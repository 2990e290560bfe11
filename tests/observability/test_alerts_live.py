"""The installed alerts on a real Prometheus, end to end: the generated rules loaded as they are,
the real scheduler scraped with a read token and labelled as the ServiceMonitor labels it, and the
platform's clock played forward in a file.

No reconciler runs. A reservation's gate passes on the clock while it is still Scheduled: the
record's own lateness gauge rises and GreenOpsGateOverdue goes pending, then fires after its `for`.
Reporting the phase clears it. Killing the scheduler (SIGKILL) then turns GreenOpsSchedulerDown on."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from greenops.common.clock import set_clock_file
from greenops.observability import alerts
from tests.support.bookings import booking_due_now
from tests.support.prometheus import PrometheusServer, Target

pytestmark = [pytest.mark.tools, pytest.mark.integration]

OVERDUE = 'ALERTS{alertname="GreenOpsGateOverdue"}'
DOWN = 'ALERTS{alertname="GreenOpsSchedulerDown"}'


def states(result: list[dict]) -> dict[str, str]:
    """ALERTS samples as {their path label (or ""): their state}."""
    return {s["metric"].get("path", ""): s["metric"]["alertstate"] for s in result}


def test_an_overdue_gate_fires_its_alert_on_a_real_prometheus_and_a_report_clears_it(tmp_path: Path):
    rules = tmp_path / "greenops-alerts.yaml"
    rules.write_text(yaml.safe_dump({"groups": alerts.rule_groups(alerts.Thresholds(interval_seconds=300))}))
    with booking_due_now(tmp_path) as due:
        sched, reader, headers, t0, clock = due.scheduler, due.reader, due.writer, due.t0, due.clock
        target = Target("greenops-scheduler", sched.url, reader, labels={alerts.COMPONENT_LABEL: alerts.SCHEDULER})
        with PrometheusServer([target], workdir=tmp_path / "prom", rule_files=[rules]) as prom:
            up_query = f'up{{{alerts.COMPONENT_LABEL}="scheduler"}}'
            up = prom.wait_for(up_query, lambda r: r != [] and r[0]["value"][1] == "1")
            assert up and up[0]["value"][1] == "1", up
            # scraped and evaluated, the gate not yet late: silence
            prom.wait_for("count(greenops_scheduler_overdue_gates)", lambda r: r != [], timeout=10)
            # an evaluation before the first scrape saw no `up` at all (absent: pending); the first one
            # after it clears that
            assert prom.wait_for(DOWN, lambda r: r == [], timeout=10) == []
            assert prom.query(OVERDUE) == []

            set_clock_file(clock, t0 + timedelta(minutes=10))  # nobody opened the gate: 600 s > 300 s
            pending = prom.wait_for(OVERDUE, lambda r: states(r) == {"pulumi": "pending"}, timeout=30)
            assert states(pending) == {"pulumi": "pending"}, pending
            fired = prom.wait_for(OVERDUE, lambda r: states(r) == {"pulumi": "firing"}, timeout=120)  # `for: 1m`
            assert states(fired) == {"pulumi": "firing"}, fired
            assert fired[0]["metric"]["severity"] == "critical"
            [shown] = [a for a in _alerts(prom) if a["labels"]["alertname"] == "GreenOpsGateOverdue"]
            assert shown["annotations"]["summary"].startswith("A pulumi-path gate is overdue by 10m"), shown
            assert "greenops reconcile" in shown["annotations"]["runbook"]

            # a reconciler reports the gate opened: the alert resolves
            patched = httpx.patch(
                f"{sched.url}/reservations/team-a/etl", json={"phase": "Provisioning"}, headers=headers, timeout=15
            )
            assert patched.status_code == 200, patched.text
            assert prom.wait_for(OVERDUE, lambda r: r == [], timeout=30) == []

            # the scheduler dies: its scrape fails, and its down alert turns on
            sched.kill()
            down = prom.wait_for(DOWN, lambda r: states(r) == {"": "pending"}, timeout=30)  # `for: 2m`
            assert states(down) == {"": "pending"}, down
            assert prom.query(OVERDUE) == []  # a dead scheduler's lateness is not invented


def _alerts(prom: PrometheusServer) -> list[dict]:
    r = httpx.get(f"{prom.url}/api/v1/alerts", timeout=10)
    r.raise_for_status()
    return r.json()["data"]["alerts"]
