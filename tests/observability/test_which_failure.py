"""Which of six failures happened: on one healthy platform's series, each failure changes only what it
really changes, and the real ``promtool test rules`` shows that its alert, and none of the other
five, fires. An on-call engineer reads the failure off the alert's name.

    reconcile stopped       -> GreenOpsReconcileStopped
    reconcile too slow      -> GreenOpsReconcileTooSlow
    OPA down                -> GreenOpsOpaDown
    scheduler down          -> GreenOpsSchedulerDown
    forecast source down    -> GreenOpsForecastSourceFailing
    capacity exhausted      -> GreenOpsCapacityNearlyFull
"""

from __future__ import annotations

import pytest
import yaml

from greenops.observability import alerts, names
from tests.observability.test_alert_rules import INTERVAL, promtool, write_rules

pytestmark = [pytest.mark.tools]

PASS = names.PASS_SECONDS.name
C = alerts.COMPONENT_LABEL
AT = "40m"  # long enough for every alert's `for` and the slowest rate window to have seen the failure
STEPS = 40  # one sample a minute up to AT

# A healthy platform: every part scraped, a watch loop passing every 5 min in 10 s, the forecast
# source answering, the busiest zone-hour half booked, no gate late. Keys are series selectors.
HEALTHY = {
    f'up{{{C}="scheduler"}}': f"1x{STEPS}",
    f'up{{{C}="opa"}}': f"1x{STEPS}",
    f'up{{{C}="controller"}}': f"1x{STEPS}",
    f'{names.LAST_PASS.series}{{runner="watch"}}': f"0+60x{STEPS}",  # its last pass ended a moment ago
    f'{names.INTERVAL.series}{{runner="watch"}}': f"{INTERVAL}x{STEPS}",
    f'{PASS}_sum{{runner="watch"}}': f"0+2x{STEPS}",  # 10 s a pass, one pass per 5 min
    f'{PASS}_count{{runner="watch"}}': f"0+0.2x{STEPS}",
    names.CONTROLLER_LEADER.series: f"1x{STEPS}",
    f'{names.FORECAST_ERRORS.series}{{source="mlserver"}}': f"0x{STEPS}",
    f'{names.CAPACITY_USED.series}{{zone="FR"}}': f"0.5x{STEPS}",
    f'{names.REQUEST_SECONDS.name}_count{{outcome="ok"}}': f"0+30x{STEPS}",
    f'{names.REQUEST_SECONDS.name}_count{{outcome="server_error"}}': f"0x{STEPS}",
    f'{alerts.OPA_REQUESTS}{{{C}="opa",code="200"}}': f"0+30x{STEPS}",
    f'{names.OLDEST_OVERDUE_GATE.series}{{path="pulumi"}}': f"0x{STEPS}",
    names.MISSED_WINDOWS.series: f"0x{STEPS}",
    names.DATABASE_ERRORS.series: f"0x{STEPS}",
}

# failure: (what it changes in HEALTHY, the alert that must fire, that alert's labels)
FAILURES = {
    "reconcile stopped": (
        {f'{names.LAST_PASS.series}{{runner="watch"}}': f"0+60x5 300x{STEPS - 5}"},  # no pass after 5 min
        "GreenOpsReconcileStopped",
        {"runner": "watch"},
    ),
    "reconcile too slow": (
        # 400 s a pass against a 300 s interval, passing back to back
        {f'{PASS}_sum{{runner="watch"}}': f"0+60x{STEPS}", f'{PASS}_count{{runner="watch"}}': f"0+0.15x{STEPS}"},
        "GreenOpsReconcileTooSlow",
        {"runner": "watch"},
    ),
    "OPA down": ({f'up{{{C}="opa"}}': f"1x5 0x{STEPS - 5}"}, "GreenOpsOpaDown", {}),
    "scheduler down": ({f'up{{{C}="scheduler"}}': f"1x5 0x{STEPS - 5}"}, "GreenOpsSchedulerDown", {}),
    "forecast source down": (
        {f'{names.FORECAST_ERRORS.series}{{source="mlserver"}}': f"0x5 0+6x{STEPS - 5}"},
        "GreenOpsForecastSourceFailing",
        {"source": "mlserver"},
    ),
    "capacity exhausted": (
        {f'{names.CAPACITY_USED.series}{{zone="FR"}}': f"0.5x5 0.97x{STEPS - 5}"},
        "GreenOpsCapacityNearlyFull",
        {"zone": "FR"},
    ),
}
SEVERITY = {r["alert"]: r["labels"]["severity"] for g in alerts.rule_groups() for r in g["rules"]}


def scenario(name: str, changes: dict[str, str], fires: dict[str, dict[str, str]]) -> dict:
    series = {**HEALTHY, **changes}
    return {
        "name": name,
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        # every alert is asked about: the expected one fires, with its labels; every other is silent
        "alert_rule_test": [
            {
                "eval_time": AT,
                "alertname": alert,
                "exp_alerts": [{"exp_labels": {**fires[alert], "severity": SEVERITY[alert]}}] if alert in fires else [],
            }
            for alert in alerts.alert_names()
        ],
    }


def run(tmp_path, scenarios: list[dict]):
    write_rules(tmp_path, annotations=False)
    tests = tmp_path / "which.test.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": scenarios}))
    return promtool("test", "rules", str(tests))


def test_a_healthy_platform_fires_nothing(tmp_path):
    outcome = run(tmp_path, [scenario("healthy", {}, {})])
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr


@pytest.mark.parametrize("failure", list(FAILURES))
def test_each_failure_fires_its_own_alert_and_no_other(tmp_path, failure: str):
    changes, alert, labels = FAILURES[failure]
    outcome = run(tmp_path, [scenario(failure, changes, {alert: labels})])
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr


def test_the_six_alerts_are_six_different_names():
    fired = [alert for _, alert, _ in FAILURES.values()]
    assert len(set(fired)) == len(FAILURES) and set(fired) <= set(alerts.alert_names())


def test_a_failure_expected_silent_is_reported_by_promtool(tmp_path):
    """The harness can fail: OPA down, but expecting only the scheduler's alert."""
    changes, _, _ = FAILURES["OPA down"]
    outcome = run(tmp_path, [scenario("OPA down, wrongly expected", changes, {"GreenOpsSchedulerDown": {}})])
    assert outcome.returncode != 0 and "GreenOpsOpaDown" in outcome.stdout + outcome.stderr
