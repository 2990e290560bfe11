"""The placements as a timeline (a Gantt chart): one row per workload with its chosen (expected)
window, coloured hour by hour with the chosen zone's carbon intensity, the baseline run (started
when the decision was made, at the origin), the deadline and now (``GREENOPS_NOW`` when set). A
completed run whose rows carry the truth (greenops.insight.hindsight) also shows, in a thin band above, the
run as it really happened (coloured with its actual mean) and the oracle's window (outlined).

The chosen windows' colours come from the catalog's month x hour profiles, the embedded default
source; a stack whose scheduler reads another source was decided on other numbers, and the colour
bar says which. The actual run's colour is the history's mean, on the same scale.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenops.common.clock import parse_time, system_clock

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ROW_INCHES = 0.32  # per workload: keeps 8-point labels apart at any count
DEADLINE_REACH = timedelta(hours=12)  # deadlines further past the last run are written, not drawn
TRUTH_BAND = (-0.36, 0.12)  # the actual and oracle windows: offset from the row and height, above the run
ORACLE_COLOUR = "darkgreen"
# DATE_AXIS: matplotlib converts datetime and timedelta values on a date axis (its units registry), but
# its annotations accept only numbers there; the `type: ignore[arg-type]` on such calls below say that.


def _at(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def truth_windows(row: dict[str, Any]) -> dict[str, tuple[datetime, datetime]]:
    """The actual and oracle windows a row carries (greenops.insight.hindsight.with_truth), by name."""
    out = {}
    if row.get("actualFrom") and row.get("actualTo"):
        out["actual"] = (parse_time(row["actualFrom"]), parse_time(row["actualTo"]))
    if row.get("oracleStart"):
        start = parse_time(row["oracleStart"])
        out["oracle"] = (start, start + timedelta(hours=row["hours"]))
    return out


def figure(rows: list[dict[str, Any]], now: datetime | None = None) -> Figure:
    """The matplotlib Figure of the placed rows (those with a start). The axis spans the runs and
    their baselines, deadlines and now up to DEADLINE_REACH past the last run; later ones are
    written at the edge."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from greenops.catalog import load_catalog
    from greenops.intensity import ProfileSource

    now = now or system_clock()
    placed = [r for r in rows if r.get("start")]
    source = ProfileSource(load_catalog())
    zones = source.zones()
    windows: list[tuple[dict[str, Any], datetime, datetime, list[tuple[datetime, datetime, float]]]] = []
    for r in placed:
        start = parse_time(r["start"])  # (placed: its start is set)
        end = start + timedelta(hours=r["hours"])
        hours: list[tuple[datetime, datetime, float]] = []
        if r.get("zone") in zones:
            s = source.series(r["zone"], start.timestamp(), end.timestamp(), start.timestamp())
            for t, v in zip(s.boundaries[:-1], s.values, strict=True):
                a, b = max(t, start.timestamp()), min(t + s.step, end.timestamp())
                if b > a:
                    hours.append(
                        (datetime.fromtimestamp(a, start.tzinfo), datetime.fromtimestamp(b, start.tzinfo), float(v))
                    )
        windows.append((r, start, end, hours))
    values = [v for *_, hours in windows for *_, v in hours] + [r["baseline"] for r in placed if r.get("baseline")]
    values += [r["actual"] for r in placed if r.get("actual") is not None]
    truths = [truth_windows(r) for r, *_ in windows]
    values = values or [0.0, 1.0]
    norm, cmap = (
        Normalize(min(values), max(values) if max(values) > min(values) else min(values) + 1),
        plt.get_cmap("RdYlGn_r"),
    )

    ends = [end for _, _, end, _ in windows] + [b for t in truths for _, b in t.values()] or [now + timedelta(hours=1)]
    firsts = [min(filter(None, (start, _at(r.get("decidedAt"))))) for r, start, _, _ in windows] or [now]
    firsts += [a for t in truths for a, _ in t.values()]
    left = min(firsts + [now]) - timedelta(hours=1)
    right = max(ends) + timedelta(hours=1)
    deadlines = [d for d in (_at(r.get("deadline")) for r, *_ in windows) if d and d <= max(ends) + DEADLINE_REACH]
    right = max([right] + [d + timedelta(hours=1) for d in deadlines])
    if now <= max(ends) + DEADLINE_REACH:
        right = max(right, now + timedelta(hours=1))

    fig, ax = plt.subplots(figsize=(13, 1.6 + ROW_INCHES * max(len(windows), 1)))
    for y, ((r, start, end, hours), truth) in enumerate(zip(windows, truths, strict=True)):
        decided = _at(r.get("decidedAt"))
        if decided is not None:  # the baseline: the same run, started at decision time at the origin
            fill = cmap(norm(r["baseline"])) if r.get("baseline") else "none"
            ax.barh(
                y + 0.3,
                end - start,  # type: ignore[arg-type]  # DATE_AXIS
                left=decided,  # type: ignore[arg-type]  # DATE_AXIS
                height=0.22,
                color=fill,
                edgecolor="0.45",
                hatch="////",
                linewidth=0.6,
            )
        if hours:
            for a, b, v in hours:
                ax.barh(y, b - a, left=a, height=0.5, color=cmap(norm(v)), linewidth=0)  # type: ignore[arg-type]  # DATE_AXIS
        else:
            ax.barh(y, end - start, left=start, height=0.5, color="0.7", linewidth=0)  # type: ignore[arg-type]  # DATE_AXIS
        chosen = ax.barh(y, end - start, left=start, height=0.5, color="none", edgecolor="black", linewidth=0.6)  # type: ignore[arg-type]  # DATE_AXIS
        chosen[0].set_gid(f"expected:{r['workload']}")
        _truth(ax, r, y, truth, cmap(norm(r["actual"])) if r.get("actual") is not None else "0.7")
        deadline = _at(r.get("deadline"))
        if deadline is not None and deadline <= right:
            ax.plot([deadline, deadline], [y - 0.35, y + 0.35], color="crimson", linewidth=1.6)  # type: ignore[arg-type]  # DATE_AXIS
        elif deadline is not None:
            _note(ax, f"deadline {deadline:%Y-%m-%d}", (right, y), (-4, 0), "crimson", ha="right", va="center")
        if r.get("phase"):
            _note(ax, r["phase"], (end, y), (4, 0), "0.3", va="center", clip_on=True)
    if now <= right:
        ax.axvline(now, color="royalblue", linestyle="--", linewidth=1)  # type: ignore[arg-type]  # DATE_AXIS
    else:
        corner = {"xycoords": "axes fraction", "ha": "right", "va": "bottom"}  # now is past the axis: say so
        _note(ax, f"now {now:%Y-%m-%d} →", (1, 1), (-4, 4), "royalblue", **corner)
    ax.set_yticks(range(len(windows)), [f"{r['workload']}  ({r.get('zone') or '-'})" for r, *_ in windows], fontsize=8)
    ax.set_ylim(len(windows) - 0.4, -0.7)
    ax.set_xlim(left, right)  # type: ignore[arg-type]  # DATE_AXIS
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(mdates.AutoDateLocator()))  # type: ignore[no-untyped-call]  # unannotated
    ax.grid(axis="x", color="0.9")
    ax.set_axisbelow(True)
    bar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01, fraction=0.03)
    bar.set_label("gCO2eq/kWh, chosen zone (profile)", fontsize=8)
    handles = [
        Patch(facecolor=cmap(0.2), edgecolor="black", label="chosen window (expected)"),
        Patch(
            facecolor=cmap(0.8),
            edgecolor="0.45",
            hatch="////",
            label="baseline: run at decision time, at the origin (mean)",
        ),
        Line2D([], [], color="crimson", label="deadline"),
        Line2D([], [], color="royalblue", linestyle="--", label=f"now {now:%Y-%m-%d %H:%M}Z"),
    ]
    if any(truths):
        handles += [
            Patch(facecolor=cmap(0.5), edgecolor="black", label="actual run (history's mean)"),
            Patch(facecolor="none", edgecolor=ORACLE_COLOUR, linestyle="--", label="oracle: best in hindsight"),
        ]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    ax.set_title(f"Placements: {len(windows)} workloads, chosen windows against the baseline", fontsize=10)
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))  # room for the legend below
    return fig


def plot(rows: list[dict[str, Any]], path: Path, now: datetime | None = None) -> Path:
    import matplotlib.pyplot as plt

    fig = figure(rows, now)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _truth(ax: Axes, r: dict[str, Any], y: int, truth: dict[str, tuple[datetime, datetime]], fill: Any) -> None:
    """The actual run (filled with its mean) and the oracle's window (outlined, its zone written when
    it is not the placed one), in a thin band above the row; each bar's gid names it, for tests and
    for SVG output."""
    dy, height = TRUTH_BAND
    if "actual" in truth:
        a, b = truth["actual"]
        bar = ax.barh(y + dy, b - a, left=a, height=height, color=fill, edgecolor="black", linewidth=0.5)  # type: ignore[arg-type]  # DATE_AXIS
        bar[0].set_gid(f"actual:{r['workload']}")
    if "oracle" in truth:
        a, b = truth["oracle"]
        bar = ax.barh(y + dy, b - a, left=a, height=height, color="none", edgecolor=ORACLE_COLOUR, linewidth=1.1)  # type: ignore[arg-type]  # DATE_AXIS
        bar[0].set_linestyle("--")
        bar[0].set_gid(f"oracle:{r['workload']}")
        if r.get("oracleZone") and r["oracleZone"] != r.get("zone"):
            # before its start: the actual run, in the same band, often follows the oracle's window
            _note(
                ax,
                f"oracle: {r['oracleZone']}",
                (a, y + dy),
                (-3, 0),
                ORACLE_COLOUR,
                ha="right",
                va="center",
                clip_on=True,
            )


def _note(ax: Axes, text: str, xy: tuple[Any, Any], offset: tuple[float, float], color: str, **kw: Any) -> None:
    """Small text ``offset`` points from ``xy`` (data coordinates unless ``xycoords`` says otherwise)."""
    ax.annotate(text, xy, xytext=offset, textcoords="offset points", fontsize=7, color=color, **kw)
