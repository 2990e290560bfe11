"""Failover: a placement whose region cannot run it any more is placed again elsewhere, within its
constraints and deadline, as a new attempt of the same workload.

Two things start one (greenops.placing.lifecycle.fail_over decides whether there is room and an
attempt left):
- the operator reports a terminal error (quota, a capacity stock-out, a region outage it sees);
- an admin declared the placement's region unavailable in the scheduler's record
  (``PUT /outages/{provider}/{region}``): each pass reads the declarations once every
  OUTAGES_MAX_AGE and moves what is Scheduled, Provisioning or Running there.

The new attempt never goes back to a region an earlier attempt failed in. Each is recorded in the
lifecycle's ``failovers``: from where, in which phase, why, the hours run there that are lost, and
what it costs in carbon (the lost hours' emissions, and the new placement's expected emissions
against the old one's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, Field, field_serializer

from greenops.catalog.energy import account
from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.models.decision import Decision
from greenops.models.workload import Workload, _Model

# Attempts after the first that a workload may fail over to (a Placement's ``maxFailovers``).
DEFAULT_MAX_FAILOVERS = 3
OUTAGES_MAX_AGE = 10.0  # seconds a pass's copy of the declared outages is used for


class Failover(_Model):
    """One attempt given up: where it was, why it moved, and what moving cost."""

    at: AwareDatetime
    region: str = Field(description="provider/region it left")
    zone: str
    phase: str = Field(description="the phase it was in when it failed over")
    reason: str
    ran_hours: float = Field(default=0.0, description="hours run there, lost: the run starts again elsewhere")
    intensity_before: float | None = None
    intensity_after: float | None = None
    lost_g: float | None = Field(default=None, description="gCO2e of the lost hours, at the expected intensity")
    extra_g: float | None = Field(
        default=None, description="gCO2e the move costs: the lost hours and the new run against the old one"
    )

    @field_serializer("at")
    def _ser(self, v: datetime) -> str:
        return stamp(v)


def region_of(decision: Decision) -> str:
    return f"{decision.provider}/{decision.region}"


def avoided(failovers: Iterable[Failover]) -> frozenset[str]:
    """The regions earlier attempts failed in: a new attempt goes elsewhere."""
    return frozenset(f.region for f in failovers)


def priced(f: Failover, workload: Workload, old: Decision, new: Decision) -> Failover:
    """``f`` with the new attempt's intensity and what the move costs in carbon."""

    def grams(decision: Decision, hours: float) -> float | None:
        row = {
            "provider": decision.provider,
            "cpu": workload.cpu,
            "memory": workload.memory,
            "hours": hours,
            "expected": decision.expected_intensity,
            "phase": "Running",
        }
        got: float | None = account([row])[0]["expected_g"]
        return got

    lost = grams(old, f.ran_hours) if f.ran_hours else 0.0
    before, after = grams(old, workload.duration_hours), grams(new, workload.duration_hours)
    extra = None if None in (lost, before, after) else round(lost + after - before, 1)  # type: ignore[operator]
    return f.model_copy(update={"intensity_after": new.expected_intensity, "lost_g": lost, "extra_g": extra})


class Outages:
    """The outages declared in the scheduler's record, read at most once per ``max_age`` by this
    process (the dynamic provider serves every placement of a pass): ``provider/region`` -> what
    was declared."""

    def __init__(self, max_age: float = OUTAGES_MAX_AGE):
        self.max_age = max_age
        self._lock = threading.Lock()
        self._read: dict[str, tuple[float, dict[str, dict[str, Any]]]] = {}

    def of(self, url: str, fetch: Callable[[], list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        """The declarations at the scheduler ``url``; raises GreenOpsError when it cannot be asked."""
        with self._lock:
            at, known = self._read.get(url, (0.0, {}))
            if time.monotonic() - at < self.max_age:
                return known
            found = {f"{o['provider']}/{o['region']}": o for o in fetch()}
            self._read[url] = (time.monotonic(), found)
            return found


def outage_reason(declared: dict[str, Any]) -> str:
    return (
        f"region {declared['provider']}/{declared['region']} declared unavailable at {declared['declaredAt']} "
        f"by {declared['declaredBy']}: {declared['reason']}"
    )


class NoRoomElsewhere(GreenOpsError):
    """A failover found no region to go to: the workload is Failed with this reason."""
