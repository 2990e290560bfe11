"""Energy and emissions of a run, from the power model in data/power.json (Cloud Carbon Footprint's
coefficients): what the report accounts per placement, and the scheduler's metrics per booking.

Energy of a run = hours x (vCPUs x (min + u x (max - min)) W + memory GB x W/GB) x PUE, with the
per-provider coefficients and utilisation u; emissions = energy x a mean intensity (the expected,
baseline, actual and oracle ones: greenops.insight.report says which is which).
"""

from __future__ import annotations

from typing import Any

from greenops.catalog import data_dir
from greenops.catalog.schema import PowerFile

# A Failed workload never ran (or never finished); a Released one was given back (its VmTemplate
# deleted, or replaced by a new spec) and is counted, if at all, under the booking that replaced it.
NOT_COUNTED = {"Failed", "Released"}
GRAMS = ("energy_kwh", "expected_g", "baseline_g", "saving_g", "actual_g", "oracle_g")


def power_model() -> PowerFile:
    return PowerFile.model_validate_json((data_dir() / "power.json").read_text())


def account(rows: list[dict[str, Any]], model: PowerFile | None = None) -> list[dict[str, Any]]:
    """Each row with its energy and grams; ``model`` saves reading data/power.json again (the
    scheduler accounts every booking it places)."""
    model = model or power_model()
    u = model.utilisation
    out = []
    for r in rows:
        p = model.providers.get(r.get("provider") or "")
        if p is None or r.get("expected") is None or r.get("memory") is None or r.get("phase") in NOT_COUNTED:
            out.append({**r, **dict.fromkeys(GRAMS)})
            continue
        watts = (
            r["cpu"] * (p.minWattsPerVcpu + u * (p.maxWattsPerVcpu - p.minWattsPerVcpu))
            + r["memory"] * p.memoryWattsPerGb
        )
        kwh = r["hours"] * watts * p.pue / 1000
        expected, baseline = (
            kwh * r["expected"],
            kwh * (r["baseline"] if r.get("baseline") is not None else r["expected"]),
        )
        out.append(
            {
                **r,
                "energy_kwh": round(kwh, 4),
                "expected_g": round(expected, 1),
                "baseline_g": round(baseline, 1),
                "saving_g": round(baseline - expected, 1),
                # in hindsight, for completed runs only (greenops.insight.hindsight.with_truth)
                **{f"{k}_g": None if r.get(k) is None else round(kwh * r[k], 1) for k in ("actual", "oracle")},
            }
        )
    return out
