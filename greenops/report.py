"""Carbon accounting of the placements: expected vs baseline gCO2e per run, and a plot.

Energy of a run = hours x (vCPUs x (min + u x (max - min)) W + memory GB x W/GB) x PUE, with the
per-provider coefficients and utilisation u of data/power.json (Cloud Carbon Footprint); emissions
= energy x the mean intensity the scheduler expects (expected) or the baseline's (run now at the
origin). A Failed workload never ran (or never finished), so nothing is counted for it: a missed
window is never reported as a saving. Completed runs are what was achieved; the others are planned.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from greenops.catalog import data_dir, load_catalog


def power_model() -> dict:
    return json.loads((data_dir() / "power.json").read_text())


def account(rows: list[dict]) -> list[dict]:
    model = power_model()
    u = model["utilisation"]
    out = []
    for r in rows:
        p = model["providers"].get(r.get("provider") or "", None)
        if p is None or r.get("expected") is None or r.get("phase") == "Failed":
            out.append({**r, "energy_kwh": None, "expected_g": None, "baseline_g": None, "saving_g": None})
            continue
        watts = r["cpu"] * (p["minWattsPerVcpu"] + u * (p["maxWattsPerVcpu"] - p["minWattsPerVcpu"])) + r["memory"] * p["memoryWattsPerGb"]
        kwh = r["hours"] * watts * p["pue"] / 1000
        expected, baseline = kwh * r["expected"], kwh * (r["baseline"] if r.get("baseline") is not None else r["expected"])
        out.append({**r, "energy_kwh": round(kwh, 4), "expected_g": round(expected, 1), "baseline_g": round(baseline, 1),
                    "saving_g": round(baseline - expected, 1)})
    return out


def table(rows: list[dict]) -> str:
    cols = [("workload", 16), ("phase", 12), ("provider", 8), ("region", 24), ("zone", 12), ("start", 20),
            ("runningSince", 20), ("size", 18), ("expected", 9), ("baseline", 9), ("expected_g", 11),
            ("baseline_g", 11), ("saving_g", 9)]
    lines = ["  ".join(f"{c:<{w}}" for c, w in cols)]
    for r in rows:
        lines.append("  ".join(f"{'-' if r.get(c) is None else r.get(c)!s:<{w}}" for c, w in cols))
    lines += [f"  {r['workload']}: {r['reason']}" for r in rows if r.get("reason")]
    for label, group in (("completed", [r for r in rows if r.get("phase") == "Completed"]),
                         ("planned", [r for r in rows if r.get("phase") not in ("Completed", "Failed")])):
        done = [r for r in group if r.get("expected_g") is not None]
        if done:
            e, b = sum(r["expected_g"] for r in done), sum(r["baseline_g"] for r in done)
            lines.append(f"{label}: {e / 1000:.3f} kgCO2e expected vs {b / 1000:.3f} kgCO2e baseline "
                         f"(saving {b - e:.1f} g, {100 * (1 - e / b) if b else 0:.1f} %) over {len(done)} workloads")
    failed = [r["workload"] for r in rows if r.get("phase") == "Failed"]
    if failed:
        lines.append(f"failed: {', '.join(failed)} (nothing counted)")
    lines.append("energy: CCF power model (data/power.json)")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path, days: int = 7) -> Path:
    """Each chosen zone's profile over the next ``days`` days, with the chosen run windows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from greenops.scheduler.sources import ProfileSource

    source, cat = ProfileSource(load_catalog()), load_catalog()
    zones = sorted({r["zone"] for r in rows if r.get("zone") and cat.profile(r["zone"])})
    now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    t0, t1 = now.timestamp(), (now + timedelta(days=days)).timestamp()
    fig, ax = plt.subplots(figsize=(12, 5))
    for zone in zones:
        s = source.series(zone, t0, t1, t0)
        ax.step([datetime.fromtimestamp(t, tz=timezone.utc) for t in s.boundaries[:-1]], s.values, where="post", label=zone)
    for r in rows:
        if r.get("start") and r.get("zone") in zones:
            start = datetime.fromisoformat(r["start"].replace("Z", "+00:00"))
            ax.axvspan(start, start + timedelta(hours=r["hours"]), alpha=0.15, color="green")
            ax.annotate(r["workload"], (start, float(np.nanmax([r.get("expected") or 0]))), fontsize=7, rotation=90)
    ax.set_ylabel("gCO2eq/kWh (profile)")
    ax.set_title("Chosen zones' carbon intensity and the placed runs (shaded)")
    ax.legend(fontsize=7, ncol=4)
    fig.autofmt_xdate()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
