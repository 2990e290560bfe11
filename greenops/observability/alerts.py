"""The recommended alerts, generated from the metric names (greenops.observability.names), so the
PrometheusRule the platform installs and the file ``promtool test rules`` checks are one document.

Each alert answers one of the questions an on-call engineer has at 03:00 (is reconcile stopped or
too slow, is OPA or the scheduler down or failing closed, is the forecast source down, is capacity
exhausted, was a window missed) and carries a runbook line: what to look at first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import names

# The label every ServiceMonitor and PodMonitor of the platform sets on its targets (a relabeling),
# so that ``up`` says which part is down whatever the job is called in a given Prometheus.
COMPONENT_LABEL = "greenops_component"
SCHEDULER, OPA, CONTROLLER = "scheduler", "opa", "controller"
# OPA's own request histogram (its built-in metrics), by HTTP code
OPA_REQUESTS = "http_request_duration_seconds_count"


@dataclass(frozen=True)
class Thresholds:
    interval_seconds: float = 300  # greenops:reconcile.intervalSeconds: a gate later than this is overdue
    capacity_ratio: float = 0.9  # a zone's busiest coming hour above this share of its capacity


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, runbook: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "runbook": runbook},
    }


def _down(component: str) -> str:
    up = f'up{{{COMPONENT_LABEL}="{component}"}}'
    return f"max({up}) == 0 or absent({up})"


def rule_groups(t: Thresholds = Thresholds()) -> list[dict[str, Any]]:
    """The PrometheusRule's ``spec.groups`` (also a rules file for promtool as they are)."""
    i = f"{t.interval_seconds:g}"
    passes = names.PASS_SECONDS.name
    lateness = [
        _alert(
            "GreenOpsGateOverdue",
            f"max by (path) ({names.OLDEST_OVERDUE_GATE.series}) > {i}",
            "1m",
            "critical",
            "A {{ $labels.path }}-path gate is overdue by {{ $value | humanizeDuration }}: its VM is not provisioned",
            "Check GreenOpsReconcileStopped and GreenOpsReconcileTooSlow; on the Pulumi path run `greenops reconcile "
            "--stack S` once and read its transitions; on the cluster path check the controller's leader and log.",
        ),
        _alert(
            "GreenOpsReconcileStopped",
            f"time() - max by (runner) ({names.LAST_PASS.series}) > 3 * max by (runner) ({names.INTERVAL.series})",
            "2m",
            "critical",
            "No {{ $labels.runner }} reconcile pass ended for more than three intervals",
            "The watch loop or the operator's Stack is not running: check its process or Stack status, the stack's "
            "lock (`greenops reconcile` says who holds it) and its last failure.",
        ),
        _alert(
            "GreenOpsReconcileTooSlow",
            # each kind's mean on its own (full, due), then the worse: short due passes between
            # the beats must not dilute a full pass that outlasts the interval
            f"max by (runner) (rate({passes}_sum[30m]) / rate({passes}_count[30m])) "
            f"> max by (runner) ({names.INTERVAL.series})",
            "5m",
            "warning",
            "{{ $labels.runner }} reconcile passes take longer than their interval: gates open late",
            "Shard the stack (`greenops up --shards`) or raise reconcile.intervalSeconds with the lead; see the "
            "pass duration panel.",
        ),
        _alert(
            "GreenOpsWindowMissed",
            f"sum(increase({names.MISSED_WINDOWS.series}[1h])) > 0",
            "0m",
            "warning",
            "A run missed its window in the last hour and was placed again or failed",
            "Read the transitions (`greenops report`: re-placed / FAILED with the reason); then why no pass ran "
            "between its gate and its start.",
        ),
        _alert(
            "GreenOpsControllerNoLeader",
            f"max({names.CONTROLLER_LEADER.series}) < 1 or absent({names.CONTROLLER_LEADER.series})",
            "5m",
            "critical",
            "No cluster-path controller replica holds the Lease: VmTemplates are neither confirmed nor started",
            "kubectl -n <scheduler namespace> get lease greenops-controller; the controller pods' logs "
            "(API server or scheduler unreachable).",
        ),
    ]
    services = [
        _alert(
            "GreenOpsSchedulerDown",
            _down(SCHEDULER),
            "2m",
            "critical",
            "The scheduler is not scraped: placements and admissions fail closed",
            "kubectl get pods of the scheduler; its PostgreSQL; the NetworkPolicy admitting Prometheus.",
        ),
        _alert(
            "GreenOpsOpaDown",
            _down(OPA),
            "2m",
            "critical",
            "OPA is not scraped: Placement fails closed and VmTemplates are admitted unplaced",
            "kubectl get pods of OPA; kube-mgmt's bundle replication; OPA's log.",
        ),
        _alert(
            "GreenOpsSchedulerFailingClosed",
            f'sum(rate({names.REQUEST_SECONDS.name}_count{{outcome="server_error"}}[5m])) > 0',
            "5m",
            "critical",
            "The scheduler answers 5xx: bookings fail",
            "The scheduler's log; GreenOpsDatabaseErrors; GreenOpsForecastSourceFailing.",
        ),
        _alert(
            "GreenOpsOpaFailingClosed",
            f'sum(rate({OPA_REQUESTS}{{{COMPONENT_LABEL}="{OPA}",code=~"5.."}}[5m])) > 0',
            "5m",
            "critical",
            "OPA answers 5xx: decisions fail",
            "OPA's decision log (masked) and its http.send errors to the scheduler.",
        ),
        _alert(
            "GreenOpsDatabaseErrors",
            f"sum(rate({names.DATABASE_ERRORS.series}[5m])) > 0",
            "5m",
            "critical",
            "The scheduler's record answers errors",
            "The PostgreSQL pod and its volume; the scheduler's log names the operation.",
        ),
        _alert(
            "GreenOpsForecastSourceFailing",
            f"sum by (source) (rate({names.FORECAST_ERRORS.series}[10m])) > 0",
            "10m",
            "warning",
            "The {{ $labels.source }} forecast source fails: placements use what is cached or fail",
            "The InferenceServices (`kubectl get inferenceservices`), MLServer's log, or the provider's API token.",
        ),
        _alert(
            "GreenOpsCapacityNearlyFull",
            f"max by (zone) ({names.CAPACITY_USED.series}) > {t.capacity_ratio:g}",
            "10m",
            "warning",
            "Zone {{ $labels.zone }}'s busiest coming hour is {{ $value | humanizePercentage }} booked",
            "Raise scheduler.capacityVcpu if the cloud quota allows; otherwise placements move to other zones or "
            "hours, or are refused.",
        ),
    ]
    return [
        {"name": "greenops.lateness", "rules": lateness},
        {"name": "greenops.services", "rules": services},
    ]


def alert_names() -> list[str]:
    return [r["alert"] for g in rule_groups() for r in g["rules"]]
