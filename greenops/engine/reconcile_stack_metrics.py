"""The reconcile loop's metrics (``greenops reconcile --watch --metrics-port N``): what each pass
did and how long it took, and how late the oldest gate still closed is.

A pass that did not run (its stack's lock held, or it failed) still reports lateness: the rows are
then read from the stack's recorded outputs, so passes failing while gates come due show as a lag
that grows, not as the last good pass's zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from greenops.engine.reconcile_stack import KINDS, Pass, oldest_overdue_gate
from greenops.observability import names
from greenops.observability.instruments import instrument

# a pass is one `pulumi up`: seconds for a few workloads, minutes for thousands (12.9 min at 10 000)
PASS_BUCKETS = (1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 240.0, 480.0, 900.0, 1800.0, 3600.0)


class LoopMetrics:
    """A ``reconcile.watch`` observer. ``recorded`` reads the stack's placement rows as its outputs
    hold them, for a pass that did not run; it may raise (the backend unreachable too)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        interval: timedelta,
        recorded: Callable[[], list[dict[str, Any]]] | None = None,
        runner: str = "watch",
    ):
        self.runner = runner
        self.recorded = recorded
        self.seconds = instrument(names.PASS_SECONDS, registry, PASS_BUCKETS)
        self.passes = instrument(names.PASSES, registry)
        self.transitions = instrument(names.TRANSITIONS, registry)
        self.missed = instrument(names.MISSED_WINDOWS, registry)
        self.last_pass = instrument(names.LAST_PASS, registry).labels(runner)
        self.lag = instrument(names.OVERDUE_LAG, registry).labels(runner)
        instrument(names.INTERVAL, registry).labels(runner).set(interval.total_seconds())
        for result in ("ok", "failed", "skipped"):  # every result is a series from the start: rate() sees the first
            self.passes.labels(runner, result)
        for kind in KINDS:
            self.transitions.labels(kind)

    def __call__(self, result: str, seconds: float, p: Pass | None, now: datetime, kind: str = "full") -> None:
        self.passes.labels(self.runner, result).inc()
        if result != "skipped":  # a skipped pass did no work: its second of lock checking is not a pass
            # by kind: a slow full pass must not hide among the short due passes between its beats
            self.seconds.labels(self.runner, kind).observe(seconds)
        rows = p.rows if p is not None else self._recorded()
        if p is not None:
            for t in p.transitions:
                self.transitions.labels(t.kind).inc()
                if t.missed:
                    self.missed.inc()
        if rows is not None:
            self.lag.set(oldest_overdue_gate(rows, now).total_seconds())
        self.last_pass.set(time.time())

    def _recorded(self) -> list[dict[str, Any]] | None:
        if self.recorded is None:
            return None
        try:
            return self.recorded()
        except Exception as exc:  # the Automation API's CommandError among them: a metric never stops the loop
            print(f"reconcile metrics: could not read the stack's placements: {exc}", flush=True)
            return None
