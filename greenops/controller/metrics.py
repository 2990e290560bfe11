"""The controller's metrics (``--metrics-port``): its lifecycle passes, the transitions they record,
the bookings it releases and why, whether this replica leads, and its dependencies' failures."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry

from greenops.common.errors import GreenOpsError
from greenops.observability import names
from greenops.observability.instruments import instrument
from greenops.placing.lifecycle import Event, Phase

from .record import RecordUnavailable

# a pass reads the record and every VmTemplate's objects: well under a second for a few, seconds for thousands
PASS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
CAUSES = ("deleted", "gone", "hold_expired")
DEPENDENCIES = ("scheduler", "apiserver")
SKIP_REASONS = ("malformed_key", "refused", "error")


def dependency_of(exc: BaseException) -> str | None:
    """Whose failure ``exc`` is: the scheduler's (the record), else the API server's; None for a
    VmTemplate the controller cannot read (a user's object, no dependency failed)."""
    if isinstance(exc, RecordUnavailable):
        return "scheduler"
    if isinstance(exc, GreenOpsError):
        return None
    return "apiserver"


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None, leading: Callable[[], bool] | None = None):
        registry = registry or CollectorRegistry()
        self.registry = registry
        self.pass_seconds = instrument(names.CONTROLLER_PASS_SECONDS, registry, PASS_BUCKETS)
        self.transitions = instrument(names.CONTROLLER_TRANSITIONS, registry)
        self.releases = instrument(names.CONTROLLER_RELEASES, registry)
        self.errors = instrument(names.CONTROLLER_ERRORS, registry)
        if leading is not None:
            instrument(names.CONTROLLER_LEADER, registry).set_function(lambda: 1.0 if leading() else 0.0)
        # every label value a series from the start, at zero: rate() and increase() see the first one
        for phase in Phase:
            if phase is not Phase.SCHEDULED:  # a pass never moves a run back to Scheduled on this path
                self.transitions.labels(phase.value)
        for cause in CAUSES:
            self.releases.labels(cause)
        for dependency in DEPENDENCIES:
            self.errors.labels(dependency)
        self.skipped = instrument(names.CONTROLLER_SKIPPED, registry)
        for reason in SKIP_REASONS:
            self.skipped.labels(reason)

    def moved(self, before: Iterable[Event], after: Iterable[Event]) -> None:
        """Count the events a pass added to a lifecycle, by the phase each reached."""
        seen = list(before)
        for event in after:
            if event not in seen:
                self.transitions.labels(event.phase.value).inc()

    def released(self, cause: str) -> None:
        self.releases.labels(cause).inc()

    def failed(self, exc: BaseException) -> None:
        dependency = dependency_of(exc)
        if dependency is not None:
            self.errors.labels(dependency).inc()

    def apiserver_failed(self) -> None:
        self.errors.labels("apiserver").inc()
