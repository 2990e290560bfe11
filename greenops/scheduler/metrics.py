"""The scheduler's Prometheus metrics: instruments counted as requests are served, and gauges read
from the reservation record when scraped.

Counted: request latency (greenops.scheduler.api.prometheus's middleware), bookings and their carbon
(decider), forecast calls (greenops.intensity.measured), transactions retried (booking). Read at
scrape time, from the record at the scheduler's clock: reservations by phase, each zone's busiest
coming hour, the reservations still Scheduled past their start (lateness, whichever reconciler runs
or none), and the record's database errors. Every name, help and label set is greenops.observability.names'.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from prometheus_client import generate_latest
from prometheus_client.registry import Collector
from sqlalchemy.exc import SQLAlchemyError

from greenops.catalog.energy import account, power_model
from greenops.identity import ALL_PATHS, Principal
from greenops.intensity.base import CarbonSource
from greenops.intensity.measured import MeasuredSource
from greenops.observability import names
from greenops.observability.instruments import counter, counter_family, gauge_family, histogram, registry
from greenops.reservations import ACTIVE, PENDING, TERMINAL, ReservationStore
from greenops.reservations.census import census

log = structlog.get_logger("greenops.scheduler")

# Requests and forecasts: the library's default buckets (5 ms to 10 s), with 1 and 2.5 ms below
# them, where a decision from the bundled profiles lands.
# A wait in the queue: from a second (a release frees room at once) to a day.
QUEUE_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0)
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


@dataclass
class Tally:
    """Whose booking request this is, as far as it was decided, and how it ended."""

    path: str
    tenant: str
    result: str | None = None  # set where the status alone cannot tell (a 409 for a quota)

    @classmethod
    def of(cls, principal: Principal) -> Tally:
        # Until the request's own tenant and path are decided: the principal's only ones, never the body's
        return cls(_only(principal.paths), _only(principal.tenants))


def _only(values: frozenset[str] | None) -> str:
    return next(iter(values)) if values is not None and len(values) == 1 else names.UNRESOLVED


def result_of(status: int, replayed: bool, dry_run: bool) -> str:
    """A booking request's result from its answer (names.BOOKING_RESULTS)."""
    if status == 200:
        return "replayed" if replayed else "dry_run" if dry_run else "placed"
    if status == 202:
        return "dry_run" if dry_run else "queued"
    return {403: "refused", 409: "conflict", 429: "rate_limited"}.get(status) or (
        "unavailable" if status >= 500 else "invalid"
    )


class SchedulerMetrics:
    """One app's instruments, on a registry of its own (tests run several apps in one process)."""

    def __init__(self, store: ReservationStore, capacity_vcpu: float):
        self.registry = registry()
        self.store = store
        self.capacity_vcpu = capacity_vcpu
        self.requests = histogram(names.REQUEST_SECONDS, self.registry, BUCKETS)
        self.bookings = counter(names.BOOKINGS, self.registry)
        self.carbon = {
            m.name: counter(m, self.registry)
            for m in (names.CARBON_EXPECTED, names.CARBON_BASELINE, names.CARBON_SAVED)
        }
        self.forecast_seconds = histogram(names.FORECAST_SECONDS, self.registry, BUCKETS)
        self.forecast_errors = counter(names.FORECAST_ERRORS, self.registry)
        self.retries = counter(names.DATABASE_RETRIES, self.registry)
        self.queue_wait = histogram(names.QUEUE_WAIT_SECONDS, self.registry, QUEUE_BUCKETS)
        self.queue_left = counter(names.QUEUE_LEFT, self.registry)
        self.preempted = counter(names.PREEMPTED, self.registry)
        self._power = power_model()

    def measured(self, source: CarbonSource) -> CarbonSource:
        """``source``, its forecasts timed and its failures counted."""
        return MeasuredSource(source, self.forecast_seconds, self.forecast_errors)

    def left_queue(self, path: str, outcome: str, waited_seconds: float) -> None:
        self.queue_left.labels(path, outcome).inc()
        if outcome == "admitted":
            self.queue_wait.labels(path).observe(waited_seconds)

    def booked(self, tally: Tally) -> None:
        self.bookings.labels(tally.path, tally.tenant, tally.result).inc()

    def placed(
        self, path: str, cpu: float, memory: float, hours: float, answer: dict[str, Any], regions: dict[str, str]
    ) -> None:
        """Count a new booking's carbon: each job's energy (the CCF power model of greenops.insight.report, for
        the provider the caller mapped its zone to) at its expected and at the baseline intensity. A
        job whose zone the caller did not map to a provider has no power model and adds nothing."""
        rows = [
            {
                "provider": regions.get(p["scheduling_location"], "").partition("/")[0] or None,
                "expected": p["expected_intensity"],
                "baseline": answer["baseline_intensity"],
                "cpu": cpu,
                "memory": memory,
                "hours": hours,
            }
            for p in answer["placements"]
        ]
        grams = [r for r in account(rows, self._power) if r["expected_g"] is not None]
        if not grams:
            return
        expected = sum(r["expected_g"] for r in grams)
        baseline = sum(r["baseline_g"] for r in grams)
        self.carbon[names.CARBON_EXPECTED.name].labels(path).inc(expected)
        self.carbon[names.CARBON_BASELINE.name].labels(path).inc(baseline)
        self.carbon[names.CARBON_SAVED.name].labels(path).inc(max(0.0, baseline - expected))

    def exposition(self, now: datetime) -> bytes:
        """The text exposition of every instrument and of the record as it is at ``now``."""
        return generate_latest(_Scrape(self, now))

    def record_families(self, now: datetime) -> Iterator[Any]:
        """The gauges read from the record, then its database errors (counted even when the record
        cannot be read: that failure is one of them)."""
        try:
            seen = census(self.store, now)
        except SQLAlchemyError as exc:
            log.warning("metrics.record_unreadable", error=str(exc).splitlines()[0])
        else:
            phases = gauge_family(names.RESERVATIONS)
            for phase in (PENDING, *ACTIVE, *TERMINAL):
                phases.add_metric([phase], seen.phases.get(phase, 0))
            yield phases
            used = gauge_family(names.CAPACITY_USED)
            for zone, milli in sorted(seen.busiest.items()):
                used.add_metric([zone], _ratio(milli, self.capacity_vcpu))
            yield used
            overdue, oldest = gauge_family(names.OVERDUE_GATES), gauge_family(names.OLDEST_OVERDUE_GATE)
            for path in sorted(ALL_PATHS):
                late = seen.overdue.get(path)
                overdue.add_metric([path], late.count if late else 0)
                oldest.add_metric([path], (now - late.oldest_start).total_seconds() if late else 0)
            yield overdue
            yield oldest
        errors = counter_family(names.DATABASE_ERRORS)
        for operation, n in sorted(self.store.errors().items()):
            errors.add_metric([operation], n)
        yield errors


def _ratio(milli: int, capacity_vcpu: float) -> float:
    return 0.0 if capacity_vcpu == float("inf") else milli / 1000 / capacity_vcpu


class _Scrape(Collector):
    """One scrape: the instruments, and the record read at the scrape's instant."""

    def __init__(self, metrics: SchedulerMetrics, now: datetime):
        self.metrics = metrics
        self.now = now

    def collect(self) -> Iterable[Any]:
        yield from self.metrics.registry.collect()
        yield from self.metrics.record_families(self.now)
