"""A reservation of the scheduler's record as a placement row: the shape of the stack's own rows
(``program.placement_row``), which ``report.account`` prices and ``hindsight.with_truth`` judges,
plus the reservation's ``key``, ``path``, ``end`` and the windows the scheduler weighed.

One definition for every reader of the record: the dashboard (its page and JSON rows) and
``greenops report --record``. The record is where the cluster path's life is kept: its controller
reports each VmTemplate's lifecycle (the phases and the times they really happened) with the
reservation, so a row takes its phase and times from that lifecycle when there is one. A
reservation without one (the Pulumi path keeps its lifecycle in its stack, and reports only the
phase here) has the record's phase and no times: none are made up from the clock.

The row's ``eligibleZones`` are policy's zones as recorded with the booking (its explanation), so
the oracle in hindsight searches where policy allowed the workload, not only where it ran.
"""

from __future__ import annotations

from typing import Any

from greenops.common.clock import parse_time
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail
from greenops.insight import explain, hindsight

# The record's own verdict on a closed reservation: its zone-hours are given back and nothing changes
# it any more (a Released one's lifecycle is where the run had got to when its VmTemplate went).
FINAL = {"Completed", "Failed", "Released"}


def placement_row(r: dict[str, Any]) -> dict[str, Any]:
    """The row of one reservation as ``GET /reservations?all=true&detail=true`` lists it."""
    w, a, lc = r.get("workload") or {}, r.get("answer") or {}, r.get("lifecycle") or {}
    start, end = parse_time(r["start"]), parse_time(r["end"])
    # the lifecycle's phase and reason, unless the record has since closed the reservation otherwise
    followed = bool(lc) and (r["phase"] not in FINAL or lc.get("phase") == r["phase"])
    mapping = explain.recorded_zones(r).get(r["zone"]) or {}
    zones = explain.eligible_zones(r)
    return {
        "key": r["key"],
        "path": r["path"],
        "workload": w.get("name") or r["key"],
        "tenant": r["tenant"],
        "cpu": r["cpu"] * r["jobs"],
        "memory": None if w.get("memory") is None else w["memory"] * r["jobs"],  # like cpu, every job's
        # one job's run; the first start to the last end spans a whole batch
        "hours": r.get("duration_hours") or (end - start).total_seconds() / 3600,
        "phase": lc.get("phase") if followed else r["phase"],
        "reason": lc.get("reason") if followed else r.get("reason"),
        "provider": r.get("provider"),
        "region": r.get("region"),
        "zone": r["zone"],
        "start": r["start"],  # the decided start; the actual one is runningSince
        "end": r["end"],
        "size": mapping.get("vmSize"),
        "expected": a.get("expected_intensity"),
        "baseline": a.get("baseline_intensity"),
        "saving%": a.get("saving_percent"),
        "gateOpenedAt": lc.get("gateOpenedAt"),
        "runningSince": lc.get("runningSince"),
        "completedAt": lc.get("completedAt"),
        "failedAt": lc.get("failedAt"),
        "replacements": lc.get("replacements"),
        "nextChangeAt": None,  # the controller's to know; the record does not keep it
        "events": lc.get("events") or [],
        "deadline": w.get("deadline"),
        # answers recorded before searched_from was kept: the booking's own instant
        "decidedAt": r.get("searched_from") or r.get("created_at"),
        "image": mapping.get("image"),
        "eligibleZones": zones,
        **({} if zones or not r.get("answer") else {"allowedZonesNote": hindsight.NO_POLICY_ZONES}),
        "considered": a.get("considered") or [],
        # a Pending one's place in the queue (1: the next admitted), its class and since when it waits
        "position": r.get("position"),
        "priorityClass": r.get("priority_class"),
        "queuedAt": r.get("queued_at"),
    }


def listed(scheduler: RetryingClient, path: str | None = None, tenant: str | None = None) -> list[dict[str, Any]]:
    """Every reservation of the record the caller may read (any phase, with what was recorded at
    decision time), of ``path`` and ``tenant`` when given, as placement rows."""
    params = {"all": "true", "detail": "true", **{k: v for k, v in (("path", path), ("tenant", tenant)) if v}}
    r = scheduler.request("GET", "/reservations", params=params)
    if r is None or r.status_code != 200:
        why = detail(r) if r is not None else scheduler.last_error
        raise GreenOpsError(f"the scheduler at {scheduler.url} did not list its reservations ({why})")
    return [placement_row(x) for x in r.json()["reservations"]]
