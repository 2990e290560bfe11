"""The recommended alerts, checked by the real ``promtool``: the generated rules pass ``promtool
check rules``, and ``promtool test rules`` feeds each alert series that must fire and series that
must not: a gate overdue by one interval, a pass longer than its interval, fail-closed errors,
capacity above 90 %, a stopped reconcile, a scheduler that is down."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from greenops.observability import alerts, names
from tests.support.common import require_tool

pytestmark = [pytest.mark.tools]

INTERVAL = 300
PASS = names.PASS_SECONDS.name


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([require_tool("promtool"), *args], capture_output=True, text=True, timeout=120)


def write_rules(folder: Path, annotations: bool = True) -> Path:
    groups = alerts.rule_groups(alerts.Thresholds(interval_seconds=INTERVAL))
    if not annotations:  # promtool test compares annotations verbatim; the expressions are what is tested
        groups = [
            {**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]} for g in groups
        ]
    path = folder / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def case(name: str, series: list[tuple[str, str]], at: str, alert: str, fires: list[dict]) -> dict:
    return {
        "name": name,
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series],
        "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": f} for f in fires]}],
    }


CASES = [
    case(
        "a gate overdue by one interval fires",
        [(f'{names.OLDEST_OVERDUE_GATE.series}{{path="pulumi"}}', "0 0 360x10")],
        "5m",
        "GreenOpsGateOverdue",
        [{"severity": "critical", "path": "pulumi"}],
    ),
    case(
        "a gate late by less than one interval does not",
        [(f'{names.OLDEST_OVERDUE_GATE.series}{{path="cluster"}}', "0 0 240x10")],
        "8m",
        "GreenOpsGateOverdue",
        [],
    ),
    case(
        "passes longer than the interval fire",
        [
            (f'{PASS}_sum{{runner="watch"}}', "0+400x60"),
            (f'{PASS}_count{{runner="watch"}}', "0+1x60"),
            (f'{names.INTERVAL.series}{{runner="watch"}}', f"{INTERVAL}x60"),
        ],
        "45m",
        "GreenOpsReconcileTooSlow",
        [{"severity": "warning", "runner": "watch"}],
    ),
    case(
        "full passes longer than the interval fire among many short due passes",
        [
            # one 400 s full pass a minute's worth of samples apart, twenty 1 s due passes between
            (f'{PASS}_sum{{runner="watch",pass="full"}}', "0+400x60"),
            (f'{PASS}_count{{runner="watch",pass="full"}}', "0+1x60"),
            (f'{PASS}_sum{{runner="watch",pass="due"}}', "0+20x60"),
            (f'{PASS}_count{{runner="watch",pass="due"}}', "0+20x60"),
            (f'{names.INTERVAL.series}{{runner="watch"}}', f"{INTERVAL}x60"),
        ],
        "45m",
        "GreenOpsReconcileTooSlow",
        [{"severity": "warning", "runner": "watch"}],
    ),
    case(
        "passes shorter than the interval do not",
        [
            (f'{PASS}_sum{{runner="watch"}}', "0+100x60"),
            (f'{PASS}_count{{runner="watch"}}', "0+1x60"),
            (f'{names.INTERVAL.series}{{runner="watch"}}', f"{INTERVAL}x60"),
        ],
        "45m",
        "GreenOpsReconcileTooSlow",
        [],
    ),
    case(
        "a reconcile that stopped fires",
        [
            (f'{names.LAST_PASS.series}{{runner="watch"}}', "0x30"),
            (f'{names.INTERVAL.series}{{runner="watch"}}', f"{INTERVAL}x30"),
        ],
        "25m",
        "GreenOpsReconcileStopped",
        [{"severity": "critical", "runner": "watch"}],
    ),
    case(
        "a reconcile that passes every interval does not",
        [
            (f'{names.LAST_PASS.series}{{runner="watch"}}', "0+60x30"),
            (f'{names.INTERVAL.series}{{runner="watch"}}', f"{INTERVAL}x30"),
        ],
        "25m",
        "GreenOpsReconcileStopped",
        [],
    ),
    case(
        "the scheduler failing closed fires",
        [(f'{names.REQUEST_SECONDS.name}_count{{route="/schedule",method="POST",outcome="server_error"}}', "0+5x20")],
        "15m",
        "GreenOpsSchedulerFailingClosed",
        [{"severity": "critical"}],
    ),
    case(
        "client errors are not the scheduler failing",
        [(f'{names.REQUEST_SECONDS.name}_count{{route="/schedule",method="POST",outcome="client_error"}}', "0+5x20")],
        "15m",
        "GreenOpsSchedulerFailingClosed",
        [],
    ),
    case(
        "OPA failing closed fires",
        [(f'{alerts.OPA_REQUESTS}{{{alerts.COMPONENT_LABEL}="opa",code="500",handler="v1/data"}}', "0+3x20")],
        "15m",
        "GreenOpsOpaFailingClosed",
        [{"severity": "critical"}],
    ),
    case(
        "capacity above 90 % fires",
        [
            (f'{names.CAPACITY_USED.series}{{zone="DE"}}', "0.95x30"),
            (f'{names.CAPACITY_USED.series}{{zone="FR"}}', "0.5x30"),
        ],
        "20m",
        "GreenOpsCapacityNearlyFull",
        [{"severity": "warning", "zone": "DE"}],
    ),
    case(
        "capacity at 85 % does not",
        [(f'{names.CAPACITY_USED.series}{{zone="DE"}}', "0.85x30")],
        "20m",
        "GreenOpsCapacityNearlyFull",
        [],
    ),
    case(
        "a scheduler that is down fires",
        [(f'up{{{alerts.COMPONENT_LABEL}="scheduler",instance="a"}}', "1 1 0x10")],
        "6m",
        "GreenOpsSchedulerDown",
        [{"severity": "critical"}],
    ),
    case(
        "a scheduler with one replica up is not down",
        [
            (f'up{{{alerts.COMPONENT_LABEL}="scheduler",instance="a"}}', "0x10"),
            (f'up{{{alerts.COMPONENT_LABEL}="scheduler",instance="b"}}', "1x10"),
        ],
        "6m",
        "GreenOpsSchedulerDown",
        [],
    ),
    case(
        "a missed window fires for the hour after it",
        [(f"{names.MISSED_WINDOWS.series}", "0 0 1x10")],
        "5m",
        "GreenOpsWindowMissed",
        [{"severity": "warning"}],
    ),
]


def test_the_generated_rules_pass_promtool_check(tmp_path):
    run = promtool("check", "rules", str(write_rules(tmp_path)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"SUCCESS: {len(alerts.alert_names())} rules found" in run.stdout, run.stdout


def test_every_alert_fires_on_its_series_and_not_on_the_others(tmp_path):
    write_rules(tmp_path, annotations=False)
    tests = tmp_path / "alerts.test.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": CASES}))
    run = promtool("test", "rules", str(tests))
    assert run.returncode == 0, run.stdout + run.stderr


def test_promtool_test_fails_when_an_expectation_is_wrong(tmp_path):
    """The harness can fail: the same series, expecting the overdue gate not to fire."""
    write_rules(tmp_path, annotations=False)
    wrong = {**CASES[0], "alert_rule_test": [{**CASES[0]["alert_rule_test"][0], "exp_alerts": []}]}
    tests = tmp_path / "alerts.test.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [wrong]}))
    run = promtool("test", "rules", str(tests))
    assert run.returncode != 0 and "GreenOpsGateOverdue" in run.stdout + run.stderr


def test_every_alert_has_a_runbook_and_every_name_is_a_known_metric():
    for group in alerts.rule_groups():
        for rule in group["rules"]:
            assert rule["annotations"]["runbook"] and rule["annotations"]["summary"], rule
    known = {m.series for m in names.ALL} | {
        f"{m.name}_{s}" for m in names.ALL if m.kind == "histogram" for s in ("sum", "count")
    }
    used = {w for g in alerts.rule_groups() for r in g["rules"] for w in _metric_words(r["expr"])}
    assert used <= known | {"up", alerts.OPA_REQUESTS, alerts.COMPONENT_LABEL}, used - known


def _metric_words(expr: str) -> set[str]:
    import re

    return {w for w in re.findall(r"\b(greenops_[a-z_]+|up|http_[a-z_]+)\b", expr)}
