"""Per-workload truth for completed runs: what the grid really emitted over the run (``actual``) and
the best the workload could have done, knowing everything afterwards (``oracle``).

**actual** is the mean intensity of the placed zone over ``[runningSince, runningSince + duration)``.
The lifecycle retires a run at ``runningSince + duration``; ``completedAt`` is when the retiring pass
came by, up to one reconcile interval later. The energy of every figure in the report is the
workload's duration x its power (the CCF model), so all four intensities are means over windows of
that same length, and the retirement lag is not part of the run.

**oracle** is the lowest mean intensity over a window of the run's duration, starting anywhere from
the workload's earliest start (the first time it was placed, or its decision's ``decidedAt``) to
``deadline - duration``, in any zone policy allowed it, with perfect knowledge of the history. It is
the scheduler's own search (``best_placement``) on the history instead of a forecast, with no
capacity bound. The stack's record of a decision (``placement_row``) holds the placed zone, not the
policy-allowed set; the scheduler's reservation record keeps policy's set with the booking
(``with_allowed_zones``, ``greenops report --policy-zones``); a row read from that record
(greenops.insight.record_rows, ``greenops report --record``) carries them already. A row without
``eligibleZones`` gets the oracle of its own zone only (when to run, not where), and its note says so.

A zone and period the history does not cover leaves the value out with the reason; the other
figures of the row stand.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from greenops.common.clock import parse_time, stamp
from greenops.common.errors import GreenOpsError
from greenops.intensity import CarbonSource
from greenops.intensity.series import Series, from_epoch, to_epoch
from greenops.search.algorithm import Job, NoFeasibleWindow, best_placement

PLACED_ZONE_ONLY = (
    "oracle over the placed zone only: the stack's record holds no policy-allowed zone set "
    "(--policy-zones reads it from the scheduler's record)"
)
NO_RUNNING_SINCE = (
    "actual and oracle unknown: the record holds no runningSince for this run (its owner reported "
    "the phase without its lifecycle)"
)
NO_POLICY_ZONES = "policy's zones not read: its booking holds none"
TRUTH_KEYS = ("actual", "actualFrom", "actualTo", "oracle", "oracleZone", "oracleStart", "truthNote")


def actual_window(row: dict[str, Any]) -> tuple[datetime, datetime] | None:
    """The run as it really happened: a Completed row's ``runningSince`` plus its duration."""
    if row.get("phase") != "Completed" or not row.get("runningSince"):
        return None
    since = parse_time(row["runningSince"])
    return since, since + timedelta(hours=row["hours"])


def earliest_start(row: dict[str, Any]) -> datetime | None:
    """When the workload could first have started: its first placement (the oldest recorded
    event) or its decision's search start, whichever is earlier."""
    times = [parse_time(e["at"]) for e in row.get("events") or [] if e.get("at")]
    if row.get("decidedAt"):
        times.append(parse_time(row["decidedAt"]))
    return min(times, default=None)


def oracle_zones(row: dict[str, Any]) -> tuple[list[str], str | None]:
    """The zones the oracle may use, and the limit to state when only the placed zone is known."""
    allowed = sorted(set(row.get("eligibleZones") or []))
    if allowed:
        return allowed, None
    return ([row["zone"]] if row.get("zone") else []), PLACED_ZONE_ONLY


def _mean(source: CarbonSource, zone: str, start: datetime, end: datetime) -> float:
    t0, t1 = to_epoch(start), to_epoch(end)
    s = source.series(zone, t0, t1, t1)
    return float(s.window_means(np.array([t0]), t1 - t0)[0])


def truth(row: dict[str, Any], source: CarbonSource) -> dict[str, Any]:
    """The truth fields of one row (``TRUTH_KEYS``); all None for a row that did not complete."""
    out: dict[str, Any] = dict.fromkeys(TRUTH_KEYS)
    window = actual_window(row)
    if window is None:
        if row.get("phase") == "Completed":  # a reservation whose owner reported the phase only
            out["truthNote"] = NO_RUNNING_SINCE
        return out
    notes: list[str] = []
    out["actualFrom"], out["actualTo"] = stamp(window[0]), stamp(window[1])
    try:
        out["actual"] = round(_mean(source, row["zone"], *window), 2)
    except GreenOpsError as exc:
        notes.append(f"actual unknown: {exc}")
    zones, limit = oracle_zones(row)
    first, deadline = earliest_start(row), parse_time(row["deadline"]) if row.get("deadline") else None
    if first is None:
        notes.append("oracle unknown: the record holds neither a decision time nor events")
    elif deadline is None:
        notes.append("oracle unknown: the record holds no deadline (booked without its workload)")
    else:
        histories: dict[str, Series] = {}
        for zone in zones:
            try:
                histories[zone] = source.series(zone, to_epoch(first), to_epoch(deadline), to_epoch(deadline))
            except GreenOpsError as exc:
                notes.append(f"oracle leaves out {zone}: {exc}")
        job = Job(cpu=row.get("cpu") or 0.0, memory=row.get("memory") or 0.0, duration=row["hours"] * 3600.0)
        try:
            if not histories:
                raise NoFeasibleWindow("no allowed zone has history over its window")
            best = best_placement(histories, job, to_epoch(first), to_epoch(deadline))
            out["oracle"], out["oracleZone"] = round(best.mean_intensity, 2), best.zone
            out["oracleStart"] = stamp(from_epoch(best.start))
        except NoFeasibleWindow as exc:
            notes.append(f"oracle unknown: {exc}")
        if limit:
            notes.append(limit)
        if row.get("allowedZonesNote"):
            notes.append(row["allowedZonesNote"])
    out["truthNote"] = "; ".join(notes) or None
    return out


def with_truth(rows: list[dict[str, Any]], source: CarbonSource) -> list[dict[str, Any]]:
    """``rows`` with each completed run's actual and oracle from ``source`` (see the module)."""
    return [{**r, **truth(r, source), "truthSource": source.describe()} for r in rows]


def with_allowed_zones(rows: list[dict[str, Any]], lookup: Callable[[str], list[str]]) -> list[dict[str, Any]]:
    """Completed ``rows`` with ``eligibleZones``: what ``lookup`` (workload name -> policy's zones,
    as recorded with its booking) answers. A lookup that fails leaves the row to its placed zone,
    with the reason in its note."""
    out = []
    for r in rows:
        if r.get("phase") != "Completed" or r.get("eligibleZones"):
            out.append(r)
            continue
        try:
            zones = lookup(r["workload"])
        except GreenOpsError as exc:
            out.append({**r, "allowedZonesNote": f"policy's zones not read: {exc}"})
            continue
        if zones:
            out.append({**r, "eligibleZones": zones})
        else:  # booked by a client that sent policy's explanation along with none
            out.append({**r, "allowedZonesNote": NO_POLICY_ZONES})
    return out
