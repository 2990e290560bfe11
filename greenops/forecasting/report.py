"""The held-out evaluation as files: report.json, report.md (the per-zone table) and forecasts.png."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from greenops.models.forecast_features import HISTORY_HOURS, HOUR

from .baselines import BASELINES
from .training import TrainingReport, ZoneResult

COLUMNS = [
    ("model", "model"),
    ("generic", "generic"),
    ("seasonal_naive_24h", "naive 24h"),
    ("seasonal_naive_168h", "naive 168h"),
    ("persistence", "persistence"),
]


def beats_naive(row: dict[str, Any], hours: int = 24) -> bool:
    better: bool = row[f"model.mape_{hours}h"] < row[f"seasonal_naive_24h.mape_{hours}h"]
    return better


def markdown(report: TrainingReport) -> str:
    rows = report.table()
    lines = [
        f"Held out from {report.holdout_from:%Y-%m-%d %H:%M} UTC; horizon {report.horizon} h; "
        "errors over the first 24 h / 48 h of every hourly forecast.",
        "",
    ]
    for metric, unit in (("mape", "%"), ("mae", "gCO2eq/kWh")):
        lines.append(f"{metric.upper()} ({unit}), 24 h / 48 h:")
        lines.append("")
        lines.append("| zone | " + " | ".join(label for _, label in COLUMNS) + " | beats naive 24h |")
        lines.append("|---|" + "---|" * (len(COLUMNS) + 1))
        for row in rows:
            cells = [f"{row[f'{key}.{metric}_24h']:.2f} / {row[f'{key}.{metric}_48h']:.2f}" for key, _ in COLUMNS]
            lines.append(f"| {row['zone']} | " + " | ".join(cells) + f" | {'yes' if beats_naive(row) else 'no'} |")
        lines.append("")
    wins = sum(beats_naive(r) for r in rows)
    lines.append(f"The zone model beats seasonal-naive (24 h) on 24 h MAPE in {wins} of {len(rows)} zones.")
    return "\n".join(lines) + "\n"


def as_json(report: TrainingReport) -> dict[str, Any]:
    return {
        "holdout_from": report.holdout_from.isoformat(),
        "horizon_hours": report.horizon,
        "alpha": report.alpha,
        "zones": report.table(),
        "generic_pooled": report.generic.scores,
        "fit_seconds": {r.name: r.fit_seconds for r in [*report.zones, report.generic]},
    }


def plot(results: list[ZoneResult], horizon: int, path: Path, issued_every_days: int = 14) -> None:
    """For each zone, forecasts issued at midnight UTC every ``issued_every_days`` of the held-out
    period, against what actually happened."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(14, 3.2 * len(results)), squeeze=False)
    for ax, result in zip(axes[:, 0], results, strict=False):
        test = result.test
        hours = ((test.starts - test.starts[0]) / HOUR).astype(int)
        issued = [
            i
            for i, s in enumerate(test.starts)
            if datetime.fromtimestamp(s, UTC).hour == 0 and hours[i] % (24 * issued_every_days) < 24
        ]
        actual_t = test.starts[0] + HOUR * np.arange(hours[-1] + horizon)
        actual = np.full(actual_t.size, np.nan)
        for i in range(len(test.starts)):
            actual[hours[i] : hours[i] + horizon] = test.targets[i]
        ax.plot(actual_t.astype("datetime64[s]"), actual, color="black", lw=1, label="actual")
        for n, i in enumerate(issued):
            t = (test.starts[i] + HOUR * np.arange(horizon)).astype("datetime64[s]")
            row = test.rows[i : i + 1]
            ax.plot(t, result.model.predict(row)[0], color="tab:green", lw=1.6, label="model" if n == 0 else None)
            ax.plot(
                t,
                BASELINES["seasonal_naive_24h"](row, horizon)[0],
                color="tab:orange",
                lw=1,
                ls="--",
                label="seasonal-naive 24h" if n == 0 else None,
            )
        m, b = result.scores["model"]["mape_24h"], result.scores["seasonal_naive_24h"]["mape_24h"]
        ax.set_title(
            f"{result.zone}: {horizon} h forecasts from {HISTORY_HOURS} h of history "
            f"(24 h MAPE model {m:.1f}% vs naive {b:.1f}%)"
        )
        ax.set_ylabel("gCO2eq/kWh")
        ax.legend(loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(report: TrainingReport, out: Path, plot_zones: list[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "report.json", out / "report.md"]
    files[0].write_text(json.dumps(as_json(report), indent=1))
    files[1].write_text(markdown(report))
    chosen = [r for r in report.zones if r.zone in plot_zones] or report.zones[:3]
    plot(chosen, report.horizon, out / "forecasts.png")
    files.append(out / "forecasts.png")
    return files
