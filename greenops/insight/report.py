"""Carbon accounting of the placements: expected, actual, oracle and baseline gCO2e per run, and a plot.

Energy of a run = hours x (vCPUs x (min + u x (max - min)) W + memory GB x W/GB) x PUE, with the
per-provider coefficients and utilisation u of data/power.json (Cloud Carbon Footprint); emissions
= energy x a mean intensity: the one the scheduler expected, the baseline's (run now at the
origin), and for completed runs, in hindsight (greenops.insight.hindsight), the actual one over the real run
and the oracle's (the best window and zone policy allowed). A Failed workload never ran (or never
finished), so nothing is counted for it: a missed window is never reported as a saving. Completed
runs are what was achieved; the others are planned.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

# The accounting lives below the report, where the scheduler's metrics read it too; the report
# offers it as its own (`report.account`), as it always has.
from greenops.catalog.energy import GRAMS as GRAMS
from greenops.catalog.energy import NOT_COUNTED as NOT_COUNTED
from greenops.catalog.energy import account as account
from greenops.catalog.energy import power_model as power_model
from greenops.common import output
from greenops.common.clock import parse_time

COLUMNS = (
    "workload",
    "phase",
    "provider",
    "region",
    "zone",
    "start",
    "runningSince",
    "size",
    "expected",
    "actual",
    "oracle",
    "oracleZone",
    "oracleStart",
    "baseline",
    "expected_g",
    "actual_g",
    "oracle_g",
    "baseline_g",
    "saving_g",
)
# The table view splits the columns in three, each keyed by the workload, so each fits 100 columns
# without cutting a value short: where it went, what hindsight says of it, and what it emits.
SECTIONS = (
    ("placed", ("phase", "provider", "region", "zone", "size", "start")),
    ("in hindsight (gCO2/kWh)", ("runningSince", "actual", "oracle", "oracleZone", "oracleStart")),
    ("carbon (expected and baseline gCO2/kWh; emissions g)", ("expected", "baseline", *GRAMS[1:])),
)
TIMES = ("start", "runningSince", "oracleStart")
NOTES = ("reason", "truthNote")  # printed under the tables, one line each; fields of the document


def document(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The accounted rows as ``-o json`` prints them: the table's columns, then the notes; times in
    ISO-8601 UTC."""
    return [
        {c: output.utc(r.get(c)) if c in TIMES else r.get(c) for c in (*COLUMNS, *NOTES)} | {"gateLate": late_gate(r)}
        for r in rows
    ]


def table(rows: list[dict[str, Any]]) -> str:
    shown = document(rows)
    lines = []
    for title, columns in SECTIONS:
        if not shown or any(r[c] is not None for r in shown for c in columns):  # a section of nothing is left out
            lines += [
                f"{title}:",
                output.table(("workload", *columns), [[r["workload"], *(r[c] for c in columns)] for r in shown]),
            ]
    lines += [f"  {r['workload']}: {r['reason']}" for r in rows if r.get("reason")]
    lines += [f"  {r['workload']}: in hindsight, {r['truthNote']}" for r in rows if r.get("truthNote")]
    lines += [f"  {r['workload']}: {late}" for r in rows if (late := late_gate(r))]
    for label, group in (
        ("completed", [r for r in rows if r.get("phase") == "Completed"]),
        ("planned", [r for r in rows if r.get("phase") not in ("Completed", "Failed")]),
    ):
        done = [r for r in group if r.get("expected_g") is not None]
        if done:
            e, b = sum(r["expected_g"] for r in done), sum(r["baseline_g"] for r in done)
            lines.append(
                f"{label}: {e / 1000:.3f} kgCO2e expected vs {b / 1000:.3f} kgCO2e baseline "
                f"(saving {b - e:.1f} g, {100 * (1 - e / b) if b else 0:.1f} %) over {len(done)} workloads"
            )
    lines += _hindsight_totals(rows)
    failed = [r["workload"] for r in rows if r.get("phase") == "Failed"]
    if failed:
        lines.append(f"failed: {', '.join(failed)} (nothing counted)")
    lines.append("energy: CCF power model (data/power.json)")
    return "\n".join(lines)


def late_gate(row: dict[str, Any]) -> str | None:
    """Why the row's gate shows as late: it opened after the decided start (a gate is due at the start
    less the provisioning lead, so this is late whatever the lead)."""
    opened, start = row.get("gateOpenedAt"), row.get("start")
    if not opened or not start or parse_time(opened) <= parse_time(start):
        return None
    late = round((parse_time(opened) - parse_time(start)).total_seconds())
    return f"gate late: opened at {opened}, {late} s after the decided start {start}"


def _hindsight_totals(rows: list[dict[str, Any]]) -> list[str]:
    """Actual and oracle beside expected and baseline, each over the same completed runs: those
    whose actual (or oracle) the history could tell."""
    completed = [r for r in rows if r.get("phase") == "Completed" and r.get("expected_g") is not None]
    if not completed:
        return []
    source = next((r["truthSource"] for r in completed if r.get("truthSource")), None)
    if source is None:  # not looked up (up, reconcile and the demo print the plan and its record only)
        return []
    lines = []
    for key, what in (("actual_g", "actual"), ("oracle_g", "oracle")):
        known = [r for r in completed if r.get(key) is not None]
        if not known:
            lines.append(f"completed, {what}: unknown for all {len(completed)} workloads (see the notes above)")
            continue
        x, e, b = (sum(r[k] for r in known) for k in (key, "expected_g", "baseline_g"))
        lines.append(
            f"completed, {what}: {x / 1000:.3f} kgCO2e against {e / 1000:.3f} expected and {b / 1000:.3f} "
            f"baseline over the same {len(known)} of {len(completed)} workloads (history: {source})"
        )
    return lines


def plot(rows: list[dict[str, Any]], path: Path, now: datetime | None = None) -> Path:
    """The timeline of the placements (greenops.insight.timeline) as a PNG; ``now`` defaults to the
    platform's clock (GREENOPS_NOW when set)."""
    from greenops.insight import timeline

    return timeline.plot(rows, path, now)
