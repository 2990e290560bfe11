"""Every metric the platform exposes, named once: the scheduler, the reconcile loop and the cluster
path's controller create their instruments from these, and the PrometheusRule's alerts and the
Grafana dashboard are generated from the same names, so a rename cannot leave an alert watching
nothing.

Prometheus's conventions: ``greenops_<component>_…``, counters end in ``_total``, durations are
``_seconds`` histograms, and labels are bounded (route templates, phases, tenants, zones): never a
workload, a key or a user's string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True)
class Metric:
    name: str  # a counter's without its _total: prometheus-client adds it
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()

    @property
    def series(self) -> str:
        """The name as PromQL sees it."""
        return f"{self.name}_total" if self.kind == "counter" else self.name


# --- the scheduler ---------------------------------------------------------------------------------
REQUEST_SECONDS = Metric(
    "greenops_scheduler_request_duration_seconds",
    "histogram",
    "Scheduler HTTP requests by route template, method and outcome (ok, client_error, server_error)",
    ("route", "method", "outcome"),
)
# A booking request's result: placed (booked), replayed (a retry answered from the record), dry_run
# (decided, nothing booked), refused (the caller's scope or the tenant's quota), invalid (a 422),
# conflict (409: no capacity before the deadline), rate_limited (429), unavailable (503: the source
# is down or no decision within req_timeout). A request refused before its tenant or path is decided
# (a 429, a 403 for a tenant the caller does not act for) counts under the caller's only tenant or
# path, else under UNRESOLVED: a label value no tenant can have, never the body's string.
BOOKING_RESULTS = (
    "placed",
    "queued",
    "replayed",
    "dry_run",
    "refused",
    "invalid",
    "conflict",
    "rate_limited",
    "unavailable",
)
UNRESOLVED = "(unresolved)"
BOOKINGS = Metric(
    "greenops_scheduler_bookings",
    "counter",
    "Booking requests by path, tenant and result (" + ", ".join(BOOKING_RESULTS) + ")",
    ("path", "tenant", "result"),
)
RESERVATIONS = Metric("greenops_scheduler_reservations", "gauge", "Reservations in the record by phase", ("phase",))
# The queue (greenops.scheduler.queueing): how long an admitted request waited, and how each left it
# (admitted: placed; expired: Failed, no room freed before its deadline; refused: a rule changed since).
QUEUE_OUTCOMES = ("admitted", "expired", "refused")
QUEUE_WAIT_SECONDS = Metric(
    "greenops_scheduler_queue_wait_seconds",
    "histogram",
    "How long each request admitted from the queue waited in it",
    ("path",),
)
QUEUE_LEFT = Metric(
    "greenops_scheduler_queue_left",
    "counter",
    "Requests that left the queue, by path and outcome (" + ", ".join(QUEUE_OUTCOMES) + ")",
    ("path", "outcome"),
)
PREEMPTED = Metric(
    "greenops_scheduler_preempted",
    "counter",
    "Scheduled bookings sent back to the queue for a request of a higher priority class, by the booking's path",
    ("path",),
)
CAPACITY_USED = Metric(
    "greenops_scheduler_capacity_used_ratio",
    "gauge",
    "The busiest coming zone-hour's share of the zone's capacity, per zone",
    ("zone",),
)
CARBON_EXPECTED = Metric(
    "greenops_scheduler_carbon_expected_grams",
    "counter",
    "gCO2e the placed runs are expected to emit (CCF power model x the forecast)",
    ("path",),
)
CARBON_BASELINE = Metric(
    "greenops_scheduler_carbon_baseline_grams",
    "counter",
    "gCO2e the same runs would emit at the baseline (now, at the origin)",
    ("path",),
)
CARBON_SAVED = Metric(
    "greenops_scheduler_carbon_saved_grams",
    "counter",
    "Baseline minus expected gCO2e of each placed booking that saves: a counter cannot fall, so a booking "
    "above its baseline adds nothing here (the net is baseline_grams minus expected_grams)",
    ("path",),
)
FORECAST_SECONDS = Metric(
    "greenops_scheduler_forecast_duration_seconds", "histogram", "Forecast source calls by source", ("source",)
)
FORECAST_ERRORS = Metric("greenops_scheduler_forecast_errors", "counter", "Failed forecast source calls", ("source",))
DATABASE_ERRORS = Metric(
    "greenops_scheduler_database_errors", "counter", "Database errors by operation", ("operation",)
)
DATABASE_RETRIES = Metric(
    "greenops_scheduler_database_retries", "counter", "Transactions retried after a conflict", ("operation",)
)
# Counted from the start, not the start less a provisioning lead: the record does not keep each
# booking's lead, and at its start a reservation still Scheduled is late whatever its lead was.
OVERDUE_GATES = Metric(
    "greenops_scheduler_overdue_gates",
    "gauge",
    "Reservations still Scheduled after their start (their gate is overdue whatever its lead): lateness, "
    "whichever reconciler runs",
    ("path",),
)
OLDEST_OVERDUE_GATE = Metric(
    "greenops_scheduler_oldest_overdue_gate_seconds",
    "gauge",
    "How long ago the oldest reservation still Scheduled was due to start (0: none overdue)",
    ("path",),
)

# --- the reconcile loop (greenops reconcile --watch, the Pulumi Kubernetes Operator's runs) ---------
PASS_SECONDS = Metric(
    "greenops_reconcile_pass_duration_seconds",
    "histogram",
    "Reconcile passes that ran, by kind (pass: full, or due: the due workloads alone)",
    ("runner", "pass"),
)
PASSES = Metric(
    "greenops_reconcile_passes",
    "counter",
    "Reconcile passes by result (ok, failed, skipped: lock held)",
    ("runner", "result"),
)
TRANSITIONS = Metric(
    "greenops_reconcile_transitions",
    "counter",
    "Lifecycle transitions by kind (gate, started, retired, re-placed, failed)",
    ("kind",),
)
MISSED_WINDOWS = Metric(
    "greenops_reconcile_missed_windows", "counter", "Runs whose window was missed and re-placed or failed"
)
INTERVAL = Metric("greenops_reconcile_interval_seconds", "gauge", "The configured interval between passes", ("runner",))
LAST_PASS = Metric(
    "greenops_reconcile_last_pass_timestamp_seconds", "gauge", "When the last pass ended (Unix time)", ("runner",)
)
OVERDUE_LAG = Metric(
    "greenops_reconcile_oldest_overdue_gate_seconds",
    "gauge",
    "How late the oldest gate still closed is, as the last pass saw the stack (0: none)",
    ("runner",),
)

# --- the cluster path's controller -----------------------------------------------------------------
CONTROLLER_PASS_SECONDS = Metric("greenops_controller_pass_duration_seconds", "histogram", "Lifecycle passes")
CONTROLLER_TRANSITIONS = Metric(
    "greenops_controller_transitions", "counter", "Cluster-path lifecycle transitions by phase reached", ("phase",)
)
CONTROLLER_RELEASES = Metric(
    "greenops_controller_releases", "counter", "Bookings released by cause (deleted, gone, hold_expired)", ("cause",)
)
CONTROLLER_LEADER = Metric("greenops_controller_leader", "gauge", "1 while this replica holds the Lease")
CONTROLLER_ERRORS = Metric(
    "greenops_controller_errors", "counter", "Failed steps by dependency (scheduler, apiserver)", ("dependency",)
)
CONTROLLER_SKIPPED = Metric(
    "greenops_controller_objects_skipped",
    "counter",
    "VmTemplates a pass skipped, by why (malformed_key: an annotation no key can be; refused: the record "
    "refused the object's request; error: anything else of that one object); the pass goes on with the others",
    ("reason",),
)

ALL = tuple(v for v in dict(globals()).values() if isinstance(v, Metric))
