"""greenops-eval: the scheduler against baselines and the oracle on real traces.

    greenops-eval [--data ../shared/data] [--out build/eval] [--jobs 2000] [--oip URL]
                  [--holdout-from 2023-11-01] [--holdout-jobs 600]
    greenops-eval --scenario lwa [--lwa-steps 0 4 8 12 16] [--lwa-seeds 10]
    greenops-eval --scenario geo-constrained [--jobs 2000]
    greenops-eval --scenario capacity [--capacity-weeks 4] [--capacity-seed 2025] [--capacity-from 2025-03-03]

With --oip, model forecasts served over OIP v2 (greenops-forecast serve) join the comparison; the
held-out scenario then measures them only on the period their training left out.

Writes ``report.json`` and ``report.png`` to ``--out`` and prints the tables. ``--scenario lwa``
instead replicates Let's Wait Awhile's Scenario I (``lwa.py``) next to its published figure, and
measures why the nightly scenario's oracle differs from it (``lwa_gap.py``); it writes ``lwa.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from greenops.common.progress import progress
from greenops.evaluation import capacity_report, capture, geo_constrained_report, lwa, lwa_report
from greenops.evaluation.scenarios import (
    burst_arrivals,
    geo_arrivals,
    nightly_arrivals,
    nightly_with_baseline_at_nominal,
    run,
    summarise,
)
from greenops.intensity import CarbonSource, SeasonalNaiveSource, TraceSource
from greenops.intensity.naive import SeasonalMeanSource

if TYPE_CHECKING:
    from greenops.intensity.oip import OipSource

DAY = 86400.0
# Wiesner et al., "Let's Wait Awhile", Middleware '21: the published figure's savings at ±2 h and ±8 h
# (5 % forecast noise; lwa.PUBLISHED_FIGURE). The nightly scenario is not their Scenario I: its oracle
# is perfect knowledge, their forecasts are noisy (greenops/evaluation/README.md).
LWA_PUBLISHED = {
    (zone, hours): round(lwa.PUBLISHED_FIGURE[zone]["saving_percent"][2 * hours], 2)
    for zone in lwa.FILES
    for hours in (2, 8)
}
LWA_FILES = lwa.FILES


def forecasters(truth: TraceSource, oip_url: str | None) -> dict[str, CarbonSource]:
    out: dict[str, CarbonSource] = {
        "ours (naive 24h)": SeasonalNaiveSource(truth, DAY),
        "ours (naive 7d)": SeasonalNaiveSource(truth, 7 * DAY),
        "ours (mean 7d)": SeasonalMeanSource(truth, 7),
    }
    if oip_url:
        from greenops.intensity.oip import OipSource

        out["ours (model)"] = OipSource(oip_url, history=truth, fallback=SeasonalNaiveSource(truth, DAY), timeout=10)
    return out


def lets_wait_awhile(data: Path, oip_url: str | None = None) -> dict[str, Any]:
    truth = TraceSource.from_lwa({z: data / f for z, f in LWA_FILES.items()})
    rows = {}
    for zone in LWA_FILES:
        for window in (2, 8):
            arrivals = nightly_arrivals(zone, 2020, window)
            table = summarise(nightly_with_baseline_at_nominal(arrivals, truth, forecasters(truth, oip_url)))
            rows[f"{zone} ±{window}h"] = {
                "published_saving_percent": LWA_PUBLISHED.get((zone, window)),
                **{
                    name: {k: row[k] for k in ("mean_gco2_per_kwh", "saving_percent", "oracle_capture_percent")}
                    for name, row in table.items()
                },
            }
    return rows


def geo_temporal(truth: TraceSource, jobs: int, oip_url: str | None, since: datetime | None = None) -> dict[str, Any]:
    arrivals = geo_arrivals(sorted(truth.zones()), jobs, since=since)
    sources = forecasters(truth, oip_url)
    table = summarise(run(arrivals, truth, sources))
    if "ours (model)" in sources:
        # forecasts answered by each model, and how many fell back (a model that was not served
        # must not pass for a good one)
        model = cast("OipSource", sources["ours (model)"])  # what forecasters() puts there
        table["ours (model)"]["answers"] = dict(model.answers)
    return table


def burst(truth: TraceSource, jobs: int, capacity: float | None) -> dict[str, Any]:
    arrivals = burst_arrivals(sorted(truth.zones()), jobs)
    return summarise(run(arrivals, truth, forecasters(truth, None), capacity_vcpu=capacity))


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
    lwa = report["lets_wait_awhile"]
    names = list(lwa)
    x = range(len(names))
    for i, (series, label) in enumerate(
        [("ours (mean 7d)", "ours, 7-day seasonal mean forecast"), ("oracle", "oracle")]
    ):
        axes[0].bar([v + i * 0.27 for v in x], [lwa[n][series]["saving_percent"] for n in names], 0.27, label=label)
    axes[0].bar(
        [v + 0.54 for v in x],
        [lwa[n]["published_saving_percent"] or 0 for n in names],
        0.27,
        label="LWA published, 5 % forecast noise",
    )
    axes[0].set_xticks([v + 0.27 for v in x], names, rotation=30)
    axes[0].set_ylabel("saving vs nominal start, %")
    axes[0].set_title("Let's Wait Awhile nightly jobs, 2020")
    axes[0].legend()
    for key, ax, title in [("geo_temporal", axes[1], "16 zones, 2023: mean intensity of the runs")]:
        rows = report[key]
        ax.bar(list(rows), [r["mean_gco2_per_kwh"] for r in rows.values()], color="tab:green")
        ax.set_ylabel("gCO2eq/kWh (actual, energy-weighted)")
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=30)
    without = report["burst_without_capacity"]["ours (mean 7d)"]["placements_per_zone"]
    within = report["burst_with_capacity"]["ours (mean 7d)"]["placements_per_zone"]
    zones = sorted(set(without) | set(within), key=lambda z: -(within.get(z, 0)))
    axes[2].bar(
        [i - 0.2 for i in range(len(zones))], [without.get(z, 0) for z in zones], 0.4, label="no capacity limit"
    )
    axes[2].bar([i + 0.2 for i in range(len(zones))], [within.get(z, 0) for z in zones], 0.4, label="with capacity")
    axes[2].set_xticks(range(len(zones)), zones)
    axes[2].legend()
    axes[2].set_title("burst of jobs: placements per zone")
    axes[2].tick_params(axis="x", rotation=60)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def print_table(title: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}")
    print(f"  {'policy':22} {'gCO2/kWh':>9} {'saving %':>9} {'of oracle %':>12}  top zones")
    for name, r in rows.items():
        top = ", ".join(f"{z}:{n}" for z, n in list(r["placements_per_zone"].items())[:4])
        cap = "" if r["oracle_capture_percent"] is None else f"{r['oracle_capture_percent']:.1f}"
        print(f"  {name:22} {r['mean_gco2_per_kwh']:9.1f} {r['saving_percent']:9.2f} {cap:>12}  {top}")


def replicate_lwa(data: Path, out: Path, steps: list[int], seeds: int) -> int:
    missing = [name for name in lwa.FILES.values() if not (data / name).is_file()]
    if missing:
        print(f"greenops-eval: {', '.join(missing)} not in {data} (use --data)", file=sys.stderr)
        return 2
    if steps[0] != 0 or any(not 0 <= s <= 16 for s in steps) or sorted(set(steps)) != steps:
        print("greenops-eval: --lwa-steps must rise from 0 to at most 16 (±8 h)", file=sys.stderr)
        return 2
    if seeds < 1:
        print("greenops-eval: --lwa-seeds must be at least 1", file=sys.stderr)
        return 2
    started = time.monotonic()
    report = lwa_report.build(data, steps, range(seeds))
    report["settings"]["seconds"] = round(time.monotonic() - started, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lwa.json").write_text(json.dumps(report, indent=1))
    lwa_report.print_report(report)
    print(f"\nwrote {out / 'lwa.json'} in {report['settings']['seconds']} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (also read by scripts/docs_reference.py for the CLI reference)."""
    parser = argparse.ArgumentParser(prog="greenops-eval", description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[2]
    parser.add_argument("--data", type=Path, default=here.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=here / "build" / "eval")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=400, help="jobs in the burst scenario")
    parser.add_argument(
        "--capacity-vcpu", type=float, default=128.0, help="per zone-hour capacity in the burst scenario"
    )
    parser.add_argument("--oip", help="also evaluate model forecasts served at this OIP URL")
    parser.add_argument(
        "--holdout-from",
        default="2023-11-01",
        help="start of the forecasters' held-out period: the held-out geo scenario starts here",
    )
    parser.add_argument("--holdout-jobs", type=int, default=600)
    parser.add_argument(
        "--scenario",
        choices=["all", "lwa", "geo-constrained", "capture", "capacity"],
        default="all",
        help="all: every scenario below; lwa: Let's Wait Awhile's Scenario I replicated (and the nightly gap); "
        "geo-constrained: --jobs jobs with residency, latency and provider constraints (geo_constrained.py); "
        "capture: each forecaster's share of the oracle's saving on LWA's set-up, point vs sure rule (capture.py); "
        "capacity: carbon under tight capacity against round-robin and an offline LP bound (capacity.py)",
    )
    parser.add_argument("--capacity-weeks", type=int, default=4, help="with --scenario capacity: weeks of VMs")
    parser.add_argument("--capacity-seed", type=int, default=2025, help="with --scenario capacity: the stream's seed")
    parser.add_argument(
        "--capacity-from", default="2025-03-03", help="with --scenario capacity: the first day (2025, from January 8)"
    )
    parser.add_argument(
        "--lwa-steps",
        type=int,
        nargs="+",
        default=list(lwa.WINDOW_STEPS),
        help="with --scenario lwa: the half-hour window steps to run, from 0 (default 0 to 16: ±0 to ±8 h)",
    )
    parser.add_argument(
        "--lwa-seeds",
        type=int,
        default=len(lwa.SEEDS),
        help="with --scenario lwa: noise seeds 0..N-1 (default LWA's 10; fewer is a quick look, not the figure)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.scenario == "lwa":
        return replicate_lwa(args.data, args.out, args.lwa_steps, args.lwa_seeds)
    if args.scenario == "capture":
        return capture.cli(args.data, args.out, args.oip, args.holdout_from, args.holdout_jobs)
    if args.scenario == "geo-constrained":
        return geo_constrained_report.cli(args.data, args.out, args.jobs)
    if args.scenario == "capacity":
        first = datetime.fromisoformat(args.capacity_from).replace(tzinfo=UTC)
        return capacity_report.cli(args.data, args.out, args.capacity_weeks, args.capacity_seed, first)
    if not (args.data / "greendcc_ci_2023").is_dir():
        print(f"greenops-eval: the public traces are not in {args.data} (use --data)", file=sys.stderr)
        return 2
    started = time.monotonic()
    truth = TraceSource.from_directory(args.data / "greendcc_ci_2023")
    holdout = datetime.fromisoformat(args.holdout_from).replace(tzinfo=UTC)
    # each scenario as a step, so a terminal can show which runs (the whole set takes minutes)
    scenarios: list[tuple[str, Callable[[], Any]]] = [
        ("lets_wait_awhile", lambda: lets_wait_awhile(args.data, args.oip)),
        # a model trained before the holdout has seen most of the year: only the held-out
        # scenario measures it fairly; the whole-year one is kept for the naive forecasts
        ("geo_temporal", lambda: geo_temporal(truth, args.jobs, None)),
        ("geo_temporal_holdout", lambda: geo_temporal(truth, args.holdout_jobs, args.oip, since=holdout)),
        ("burst_without_capacity", lambda: burst(truth, args.burst, None)),
        ("burst_with_capacity", lambda: burst(truth, args.burst, args.capacity_vcpu)),
        ("geo_constrained", lambda: geo_constrained_report.build(truth, args.jobs)),
    ]
    report: dict[str, Any] = {}
    with progress(f"greenops-eval: {scenarios[0][0]}", len(scenarios)) as advance:
        for i, (name, run) in enumerate(scenarios):
            report[name] = run()
            advance(f"greenops-eval: {scenarios[i + 1][0]}" if i + 1 < len(scenarios) else "greenops-eval: done")
    report["settings"] = {
        "jobs": args.jobs,
        "burst": args.burst,
        "capacity_vcpu": args.capacity_vcpu,
        "holdout_from": holdout.isoformat(),
        "holdout_jobs": args.holdout_jobs,
        "oip": args.oip,
        "seconds": round(time.monotonic() - started, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    plot(report, args.out / "report.png")
    print("Let's Wait Awhile, nightly 30-min jobs at 01:00 UTC, 2020 (saving vs the nominal start);")
    print("'published' is LWA's, with 5 % forecast noise, not an oracle (--scenario lwa replicates it):")
    model = "ours (model)" if args.oip else None
    print(
        f"  {'scenario':10} {'published':>9} {'naive 24h':>10} {'naive 7d':>9} {'mean 7d':>8}"
        + (f" {'model':>7}" if model else "")
        + f" {'oracle':>7}"
    )
    for name, row in report["lets_wait_awhile"].items():
        pub = "" if row["published_saving_percent"] is None else f"{row['published_saving_percent']:.1f}"
        print(
            f"  {name:10} {pub:>9} {row['ours (naive 24h)']['saving_percent']:10.2f} "
            f"{row['ours (naive 7d)']['saving_percent']:9.2f} {row['ours (mean 7d)']['saving_percent']:8.2f} "
            + (f"{row[model]['saving_percent']:7.2f} " if model else "")
            + f"{row['oracle']['saving_percent']:7.2f}"
        )
    print_table(f"Geographic + temporal: 16 zones, 2023, {args.jobs} jobs over the year", report["geo_temporal"])
    print_table(f"Held out: 16 zones, {args.holdout_jobs} jobs from {holdout:%Y-%m-%d}", report["geo_temporal_holdout"])
    if args.oip:
        print(f"  model forecasts answered: {report['geo_temporal_holdout']['ours (model)']['answers']}")
    print_table(f"Burst: {args.burst} jobs within 2 h, no capacity limit", report["burst_without_capacity"])
    print_table(
        f"Burst: {args.burst} jobs within 2 h, {args.capacity_vcpu:g} vCPU per zone-hour", report["burst_with_capacity"]
    )
    print()
    geo_constrained_report.print_report(report["geo_constrained"], by=("profile",))
    print(f"\nwrote {args.out / 'report.json'} and {args.out / 'report.png'} in {report['settings']['seconds']} s\n")
    return capture.cli(args.data, args.out, args.oip, args.holdout_from, args.holdout_jobs)


if __name__ == "__main__":
    sys.exit(main())
