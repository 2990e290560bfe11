"""``greenops-eval --scenario lwa``: LWA's Scenario I next to its published figure, and the nightly gap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from greenops.evaluation.lwa import FILES, PUBLISHED_FIGURE, QUOTED, SEEDS, WINDOW_STEPS, reproduce
from greenops.evaluation.lwa_gap import factor_table
from greenops.intensity.traces import read_lwa_csv

NOISE = 0.05
GAP_STEPS = (4, 16)  # the nightly scenario's windows, ±2 h and ±8 h


def hours(step: int) -> str:
    return f"±{step / 2:g} h"


def build(data: Path, window_steps: Sequence[int] = WINDOW_STEPS, seeds: Sequence[int] = SEEDS) -> dict[str, Any]:
    """The reproduction for every window step (starting with 0), compared with the published figure;
    fewer ``seeds`` than LWA's ten give a quicker look, not the figure."""
    curves = reproduce(data, window_steps, (0.0, NOISE), seeds)
    scenario: dict[str, list[dict[str, Any]]] = {}
    for country, by_error in curves.items():
        figure = PUBLISHED_FIGURE[country]
        rows = []
        for i, step in enumerate(window_steps):
            ours = by_error[NOISE].saving_percent[i]
            rows.append(
                {
                    "window": hours(step),
                    "window_steps": step,
                    "ours_saving_percent_error_0": round(by_error[0.0].saving_percent[i], 4),
                    "ours_saving_percent_error_5": round(ours, 6),
                    "published_saving_percent_error_5": figure["saving_percent"][step],
                    "difference_points": round(ours - figure["saving_percent"][step], 6),
                    "ours_mean_gco2_per_kwh_error_5": round(by_error[NOISE].mean_gco2_per_kwh[i], 4),
                    "published_mean_gco2_per_kwh_error_5": figure["mean_gco2_per_kwh"][step],
                }
            )
        scenario[country] = rows
    report: dict[str, Any] = {"scenario_one": scenario}
    last = len(window_steps) - 1
    if window_steps[last] == 16:
        report["quoted_at_8h"] = {
            c: {
                "quoted": QUOTED[c],
                "ours": round(rows[last]["ours_saving_percent_error_5"], 2),
                "difference_points": round(rows[last]["ours_saving_percent_error_5"] - QUOTED[c], 2),
            }
            for c, rows in scenario.items()
        }
    raws = {country: read_lwa_csv(data / name) for country, name in FILES.items()}
    report["nightly_gap"] = {hours(s): factor_table(raws, s, seeds) for s in GAP_STEPS if s in window_steps}
    report["settings"] = {"window_steps": list(window_steps), "noise": NOISE, "seeds": list(seeds)}
    return report


def print_report(report: dict[str, Any]) -> None:
    countries = list(report["scenario_one"])
    print("Let's Wait Awhile, Scenario I: a 30-min job daily at 01:00 of the trace's clock (UTC), 365 jobs, 2020")
    seeds = report["settings"]["seeds"]
    print(
        "saving vs the ±0 h run, %; forecast = actual + N(0, s x mean): s = 0, and s = 5 %"
        f" (mean of seeds {seeds[0]}-{seeds[-1]});"
    )
    print("'figure' is LWA's published figure (5 %), 'diff' ours (5 %) minus the figure, in points")
    print(f"  {'window':8}" + "".join(f" | {c:^31}" for c in countries))
    print(f"  {'':8}" + " | {:>6} {:>7} {:>7} {:>8}".format("s=0", "s=5%", "figure", "diff") * len(countries))
    for i, row in enumerate(report["scenario_one"][countries[0]]):
        cells = []
        for c in countries:
            r = report["scenario_one"][c][i]
            cells.append(
                f" | {r['ours_saving_percent_error_0']:6.2f} {r['ours_saving_percent_error_5']:7.2f}"
                f" {r['published_saving_percent_error_5']:7.2f} {round(r['difference_points'], 4) + 0.0:+8.4f}"
            )
        print(f"  {row['window']:8}" + "".join(cells))
    if "quoted_at_8h" in report:
        print("  the ±8 h savings the issue quotes from the paper's text are not what LWA's code gives on its data")
        print("  (greenops/evaluation/README.md):")
        for c, q in report["quoted_at_8h"].items():
            print(f"    {c} quoted {q['quoted']:5.2f}, ours {q['ours']:5.2f}, difference {q['difference_points']:+.2f}")
    for window, gap in report["nightly_gap"].items():
        print(f"\nNightly scenario's oracle vs LWA Scenario I, {window}: saving %")
        print(f"  {'':42} {'effect alone, points':>23}   {'cumulative':>20}")
        print(f"  {'':42}" + "".join(f" {c:>7}" for c in countries) + "  " + "".join(f" {c:>6}" for c in countries))
        start = gap["nightly_oracle"]
        print(f"  {'nightly scenario, oracle':42}" + " " * 26 + "".join(f" {start[c]:6.2f}" for c in countries))
        differences = [row for row in gap["factors"] if "cumulative" in row]
        for row in differences:
            alone = "".join(f" {row['alone'][c]:+7.2f}" for c in countries)
            cumulative = "".join(f" {row['cumulative'][c]:6.2f}" for c in countries)
            print(f"  {'+ ' + row['factor']:42}{alone}  {cumulative}")
        print(
            f"  {'= LWA Scenario I (5 % noise)':42}"
            + " " * 26
            + "".join(f" {differences[-1]['cumulative'][c]:6.2f}" for c in countries)
        )
        print("  on which both agree, for scale:")
        for row in gap["factors"]:
            if "cumulative" not in row:
                print(f"  {'  ' + row['factor']:42}" + "".join(f" {row['alone'][c]:+7.2f}" for c in countries))
