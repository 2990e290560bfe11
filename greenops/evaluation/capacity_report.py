"""``greenops-eval --scenario capacity``: the capacity scenario's table (capacity.py, bound.py).

Every row is a capacity level; every cell the % of gCO2 below round-robin's, and the deadlines
missed (and, for the re-optimising policy, how many times a booking moved before its start).
Written to ``capacity.json``.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from greenops.evaluation import capacity as c
from greenops.evaluation.bound import offline_bound
from greenops.evaluation.capacity_moves import run_reoptimised
from greenops.search.scarcity import ScarcityPrice

SHORT = ("round-robin", "clean now", "origin FF", "greenops", "perfect fc", "priced", "re-optimised", "LP bound")
POLICIES = (
    "round-robin",
    "cleanest now",
    "first fit, origin",
    "greenops",
    "greenops, perfect forecast",
    "greenops + scarcity price",
    "greenops + price + hourly re-optimisation",
    "offline LP bound",
)


def build(data: Path, weeks: int = 4, seed: int = 2025, first: datetime = c.FIRST_DAY) -> dict[str, Any]:
    traces = c.Traces.load(data, first)
    requests, history = c.workload(weeks, seed), c.warm_up(seed)
    forecasts = c.Forecasts(traces, c.mean_7d(traces))
    perfect = c.Forecasts(traces, traces.source)
    rows: dict[str, Any] = {}
    for level in c.levels(requests):
        cap = level.capacity
        started = time.monotonic()
        outcomes = {
            "round-robin": c.simulate("round-robin", c.round_robin(), requests, traces, cap),
            "cleanest now": c.simulate("cleanest now", c.cleanest_now(traces), requests, traces, cap),
            "first fit, origin": c.simulate("first fit, origin", c.first_fit_origin(), requests, traces, cap),
            "greenops": c.run_greenops("greenops", requests, traces, forecasts, cap),
            "greenops, perfect forecast": c.run_greenops("perfect", requests, traces, perfect, cap),
            "greenops + scarcity price": c.run_greenops(
                "priced", requests, traces, forecasts, cap, ScarcityPrice(), history
            ),
            "greenops + price + hourly re-optimisation": run_reoptimised(
                "re-optimised", requests, traces, forecasts, cap, ScarcityPrice(), history
            ),
        }
        simulated = time.monotonic() - started
        bound = offline_bound(requests, traces, cap)
        base = outcomes["round-robin"].grams
        row: dict[str, Any] = {
            name: {
                "below_round_robin_percent": round(100 * (1 - o.grams / base), 1),
                "missed": o.missed,
                "moves": o.moves,
            }
            for name, o in outcomes.items()
        }
        row["offline LP bound"] = {
            "below_round_robin_percent": round(100 * (1 - bound.grams / base), 1),
            "missed": round(bound.missed, 1),
            "status": bound.status,
        }
        row["capacity_vcpu_per_zone_hour"] = None if level.factor is None else round(cap, 1)
        row["seconds"] = {"policies": round(simulated, 1), "bound": round(time.monotonic() - started - simulated, 1)}
        rows[level.label] = row
    return {
        "requests": len(requests),
        "run_now_peak_vcpu": c.run_now_peak(requests),
        "first_day": first.date().isoformat(),
        "weeks": weeks,
        "seed": seed,
        "levels": rows,
    }


def print_report(report: dict[str, Any]) -> None:
    print(
        f"\nCarbon under tight capacity: {report['requests']} VMs over {report['weeks']} weeks from "
        f"{report['first_day']} (seed {report['seed']}), DE/FR/GB 2025; run-now peak "
        f"{report['run_now_peak_vcpu']} vCPU"
    )
    print("  % of gCO2 below round-robin's / deadlines missed")
    width = 14
    print(f"  {'capacity':12}" + "".join(f"{p:>{width + 2}}" for p in SHORT))
    for label, row in report["levels"].items():
        cells = [f"{row[p]['below_round_robin_percent']:.1f} / {row[p]['missed']:g}" for p in POLICIES]
        print(f"  {label:12}" + "".join(f"{cell:>{width + 2}}" for cell in cells))
    print("  (" + "; ".join(f"{a}: {b}" for a, b in zip(SHORT, POLICIES, strict=True) if a != b) + ")")
    moving = "greenops + price + hourly re-optimisation"
    print(
        "  bookings moved before their start (re-optimised): "
        + ", ".join(f"{label} {row[moving]['moves']}" for label, row in report["levels"].items())
    )


def cli(data: Path, out: Path, weeks: int, seed: int, first: datetime = c.FIRST_DAY) -> int:
    if not (data / c.FILES["DE"]).is_file():
        print(f"greenops-eval: the 2025 traces are not in {data} (use --data)", file=sys.stderr)
        return 2
    report = build(data, weeks, seed, first)
    out.mkdir(parents=True, exist_ok=True)
    (out / "capacity.json").write_text(json.dumps(report, indent=1))
    print_report(report)
    print(f"\nwrote {out / 'capacity.json'}")
    return 0
