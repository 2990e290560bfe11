"""The pinned Prometheus server and promtool (tools/go/prometheus): versions and a real rules check."""

from __future__ import annotations

import re
import subprocess

import pytest

from greenops.common.toolpaths import REPO

pytestmark = pytest.mark.tools


def pinned_release() -> str:
    """The release the wrapper's go.mod pins: module versions v0.3XX.Y are Prometheus 3.XX.Y."""
    go_mod = (REPO / "tools" / "go" / "prometheus" / "go.mod").read_text()
    found = re.search(r"^require github\.com/prometheus/prometheus v0\.(\d)(\d\d)\.(\d+)$", go_mod, re.MULTILINE)
    assert found, "tools/go/prometheus/go.mod pins no github.com/prometheus/prometheus v0.3XX.Y"
    major, minor, patch = (int(part) for part in found.groups())
    return f"{major}.{minor}.{patch}"


def test_the_pin_maps_to_a_release():
    assert pinned_release() == "3.16.0"


@pytest.mark.parametrize("name", ["prometheus", "promtool"])
def test_reports_the_pinned_version(tools, name):
    out = subprocess.run([tools[name], "--version"], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0].startswith(f"{name}, version {pinned_release()} "), out


VALID_RULES = """\
groups:
  - name: scheduler
    rules:
      - record: job:http_requests:rate5m
        expr: sum by (job) (rate(http_requests_total[5m]))
      - alert: SchedulerDown
        expr: up{job="scheduler"} == 0
        for: 1m
        labels: {severity: page}
        annotations: {summary: "the scheduler is not answering scrapes"}
"""


def promtool(tools, *args, cwd=None):
    return subprocess.run([tools["promtool"], *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_promtool_accepts_valid_rules(tools, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(VALID_RULES)
    result = promtool(tools, "check", "rules", str(rules))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 2 rules found" in result.stdout + result.stderr


def test_promtool_refuses_a_broken_expression_and_names_it(tools, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(VALID_RULES.replace("rate(http_requests_total[5m])", "rate(http_requests_total[5m]"))
    result = promtool(tools, "check", "rules", str(rules))
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "FAILED" in out and "unclosed left parenthesis" in out, out
    assert 'rule 1, "job:http_requests:rate5m": could not parse expression' in out, out


def test_promtool_refuses_a_rule_with_both_record_and_alert(tools, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "groups:\n  - name: g\n    rules:\n"
        "      - record: job:up:sum\n        alert: SchedulerDown\n        expr: sum by (job) (up)\n"
    )
    result = promtool(tools, "check", "rules", str(rules))
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "\"SchedulerDown\": only one of 'record' and 'alert' must be set" in out, out


def test_promtool_unit_tests_an_alert(tools, tmp_path):
    (tmp_path / "rules.yaml").write_text(VALID_RULES)
    (tmp_path / "test.yaml").write_text(
        """\
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'up{job="scheduler", instance="127.0.0.1:8080"}'
        values: '1 1 0 0 0'
    alert_rule_test:
      - eval_time: 1m
        alertname: SchedulerDown
        exp_alerts: []
      - eval_time: 4m
        alertname: SchedulerDown
        exp_alerts:
          - exp_labels: {severity: page, job: scheduler, instance: "127.0.0.1:8080"}
            exp_annotations: {summary: "the scheduler is not answering scrapes"}
"""
    )
    result = promtool(tools, "test", "rules", "test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
