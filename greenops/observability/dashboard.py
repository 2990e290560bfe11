"""The Grafana dashboard, generated from the metric names: decisions, lateness, capacity and carbon
saved, and the health of every part, so the questions the alerts answer have a picture beside them.
The platform ships it as a ConfigMap in Grafana's sidecar convention (a label Grafana's sidecar
watches), one JSON document."""

from __future__ import annotations

import json
from typing import Any

from . import alerts, names

UID = "greenops-overview"
TITLE = "GreenOps: placements, lateness, capacity, carbon"


def _panel(pid: int, title: str, exprs: list[tuple[str, str]], x: int, y: int, unit: str = "short") -> dict[str, Any]:
    return {
        "id": pid,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": chr(65 + n), "expr": e, "legendFormat": legend} for n, (e, legend) in enumerate(exprs)],
    }


def panels() -> list[dict[str, Any]]:
    p = names
    passes = p.PASS_SECONDS.name
    rows = [
        (
            "Decisions: bookings by result",
            [(f"sum by (result) (rate({p.BOOKINGS.series}[5m]))", "{{result}}")],
            "reqps",
        ),
        (
            "Lateness: the oldest overdue gate (alert above one interval)",
            [
                (f"max by (path) ({p.OLDEST_OVERDUE_GATE.series})", "scheduler's record, {{path}}"),
                (f"max by (runner) ({p.OVERDUE_LAG.series})", "as {{runner}} saw it"),
            ],
            "s",
        ),
        (
            "Reconcile: mean pass duration against its interval",
            [
                (f"rate({passes}_sum[15m]) / rate({passes}_count[15m])", "{{pass}} pass, {{runner}}"),
                (f"max by (runner) ({p.INTERVAL.series})", "interval, {{runner}}"),
            ],
            "s",
        ),
        (
            "Capacity: busiest coming hour per zone",
            [(f"topk(10, {p.CAPACITY_USED.series})", "{{zone}}")],
            "percentunit",
        ),
        (
            "Carbon: gCO2e saved against the baseline",
            [(f"sum by (path) (increase({p.CARBON_SAVED.series}[1d]))", "{{path}}, last day")],
            "short",
        ),
        (
            "Health: targets up, 5xx answers, forecast errors",
            [
                (f"sum by ({alerts.COMPONENT_LABEL}) (up)", f"{{{{{alerts.COMPONENT_LABEL}}}}} up"),
                (f'sum(rate({p.REQUEST_SECONDS.name}_count{{outcome="server_error"}}[5m]))', "scheduler 5xx"),
                (f"sum by (source) (rate({p.FORECAST_ERRORS.series}[5m]))", "forecast errors, {{source}}"),
            ],
            "short",
        ),
    ]
    return [
        _panel(n + 1, title, exprs, 12 * (n % 2), 8 * (n // 2), unit) for n, (title, exprs, unit) in enumerate(rows)
    ]


def dashboard() -> dict[str, Any]:
    return {
        "uid": UID,
        "title": TITLE,
        "tags": ["greenops"],
        "timezone": "utc",
        "schemaVersion": 39,
        "refresh": "1m",
        "time": {"from": "now-24h", "to": "now"},
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}]
        },
        "panels": panels(),
    }


def dashboard_json() -> str:
    return json.dumps(dashboard(), indent=1, sort_keys=True)
