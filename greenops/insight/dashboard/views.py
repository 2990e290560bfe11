"""What the page shows, built from the record: the placement rows, their totals, and the two
Plotly figures (the timeline, and the forecast of each zone in use against what each placement
expected when it was decided).

Plotly draws hover text, tick labels and legend names as (a subset of) HTML, so every string a
user wrote (workload names above all) is escaped before it goes into a figure.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from html import escape
from typing import TYPE_CHECKING, Any, TypedDict

from greenops.common.clock import parse_time as _at
from greenops.common.errors import GreenOpsError
from greenops.insight import record_rows, report
from greenops.insight.dashboard.data import DashboardData

if TYPE_CHECKING:
    import plotly.graph_objects as go

FILTERS = ("tenant", "provider", "region", "phase")
ALTERNATIVES_SHOWN = 5  # in a timeline bar's hover: the runners-up the scheduler weighed
HISTORY = timedelta(days=7)  # besides the active ones, placements that ended this recently
MAX_ROWS = 500  # the most recent by start; the JSON API has them all
FORECAST_SPAN = (timedelta(days=2), timedelta(days=5))  # before and after now: what the chart draws
LIFECYCLE_TIMES = (("runningSince", "running since"), ("completedAt", "completed"), ("failedAt", "failed"))


def placement_rows(reservations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per reservation (greenops.insight.record_rows, with its recorded lifecycle), priced by
    report.account (energy from the CCF model)."""
    return report.account([record_rows.placement_row(r) for r in reservations])


def options(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {k: sorted({r[k] for r in rows if r.get(k)}) for k in FILTERS}


class Totals(TypedDict):
    """The rows' emissions added up (grams CO2eq), over the rows whose expected emissions are known."""

    workloads: int
    counted: int
    expected_g: float
    baseline_g: float
    saving_g: float
    saving_percent: float | None


def totals(rows: list[dict[str, Any]]) -> Totals:
    counted = [r for r in rows if r.get("expected_g") is not None]
    expected, baseline = sum(r["expected_g"] for r in counted), sum(r["baseline_g"] for r in counted)
    return {
        "workloads": len(rows),
        "counted": len(counted),
        "expected_g": round(expected, 1),
        "baseline_g": round(baseline, 1),
        "saving_g": round(baseline - expected, 1),
        "saving_percent": round(100 * (1 - expected / baseline), 1) if baseline else None,
    }


def _label(r: dict[str, Any]) -> str:
    return escape(f"{r['workload']} ({r['zone']})")


def _hover(r: dict[str, Any]) -> str:
    lines = [
        f"<b>{escape(r['workload'])}</b> ({r['path']}, {r['phase']})",
        f"{r['provider']}/{r['region']} ({r['zone']})",
        f"{r['start']} for {r['hours']:g} h",
        f"expected {r['expected']} g/kWh, baseline {r['baseline']}",
    ]
    # as its owner recorded it: the actual start, and the end (the reason is the users' text too)
    lines += [f"{label} {r[k]}" for k, label in LIFECYCLE_TIMES if r.get(k)]
    if r.get("reason"):
        lines.append(escape(str(r["reason"])))
    others = [c for c in r["considered"] if c["scheduling_location"] != r["zone"]][:ALTERNATIVES_SHOWN]
    if others:
        lines.append("also weighed:")
        lines += [
            f"  {c['scheduling_location']} at {c['scheduling_time']}: {c['expected_intensity']:g}" for c in others
        ]
    return "<br>".join(lines)


def timeline_figure(rows: list[dict[str, Any]], now: datetime) -> go.Figure:
    import plotly.graph_objects as go

    rows = sorted(rows, key=lambda r: (r["start"], r["workload"]))
    labels = [_label(r) for r in rows]
    ms = [r["hours"] * 3600_000 for r in rows]
    fig = go.Figure()
    decided = [r for r in rows if r.get("decidedAt")]
    fig.add_bar(
        name="baseline: run at decision time",
        orientation="h",
        y=[_label(r) for r in decided],
        base=[r["decidedAt"] for r in decided],
        x=[r["hours"] * 3600_000 for r in decided],
        width=0.25,
        offset=0.1,
        marker={
            "color": "rgba(0,0,0,0)",
            "line": {"color": "#777", "width": 1},
            "pattern": {"shape": "/", "fgcolor": "#999"},
        },
        hoverinfo="skip",
    )
    fig.add_bar(
        name="chosen window",
        orientation="h",
        y=labels,
        base=[r["start"] for r in rows],
        x=ms,
        width=0.45,
        offset=-0.3,
        marker={
            "color": [r["expected"] or 0 for r in rows],
            "colorscale": "RdYlGn_r",
            "colorbar": {"title": {"text": "g/kWh"}},
            "line": {"color": "#222", "width": 1},
        },
        hovertext=[_hover(r) for r in rows],
        hoverinfo="text",
    )
    due = [r for r in rows if r.get("deadline")]
    fig.add_scatter(
        name="deadline",
        x=[r["deadline"] for r in due],
        y=[_label(r) for r in due],
        mode="markers",
        marker={"symbol": "line-ns-open", "size": 16, "color": "crimson"},
    )
    fig.add_vline(x=now.timestamp() * 1000, line={"dash": "dash", "color": "royalblue"})
    span_end = max([_at(r["end"]) for r in rows], default=now) + timedelta(hours=12)
    starts = [_at(r["decidedAt"] or r["start"]) for r in rows]
    fig.update_layout(
        barmode="overlay",
        height=160 + 28 * max(len(rows), 1),
        margin={"l": 10, "r": 10, "t": 30, "b": 30},
        xaxis={"type": "date", "range": [min(starts + [now]) - timedelta(hours=1), max(span_end, now)]},
        yaxis={"autorange": "reversed", "automargin": True},
        legend={"orientation": "h", "y": -0.15},
        title={"text": "Timeline: chosen windows (colour: expected g/kWh), baselines, deadlines, now"},
    )
    return fig


def intensity_figure(rows: list[dict[str, Any]], data: DashboardData, now: datetime) -> go.Figure:
    """Each zone in use: the source's forecast over the placements' span, and each placement's
    expected mean as recorded when it was decided."""
    import plotly.graph_objects as go

    fig = go.Figure()
    if not rows:
        return fig
    # the placements' span, within days of now: an old record must not ask for years of forecasts
    t0 = max(min(_at(r["start"]) for r in rows) - timedelta(hours=6), now - FORECAST_SPAN[0])
    t1 = min(max(_at(r["end"]) for r in rows) + timedelta(hours=6), now + FORECAST_SPAN[1])
    sources, missing = set(), []
    for zone in sorted({r["zone"] for r in rows}) if t1 > t0 else []:
        try:
            f = data.forecast(zone, t0, t1)
        except GreenOpsError as exc:  # one zone's source down or unknown: the others still show
            missing.append(f"{zone} ({exc})")
            continue
        sources.add(f.source)
        times = [datetime.fromtimestamp(f.start + i * f.step, t0.tzinfo) for i in range(len(f.values))]
        fig.add_scatter(name=f"{zone} forecast", x=times, y=f.values, mode="lines", line={"shape": "hv"})
    for r in rows:
        if r.get("expected") is not None:
            fig.add_scatter(
                name=escape(f"{r['workload']} expected"),
                x=[r["start"], r["end"]],
                y=[r["expected"]] * 2,
                mode="lines",
                line={"dash": "dot", "width": 3},
                showlegend=False,
                hovertext=escape(f"{r['workload']}: expected {r['expected']} g/kWh in {r['zone']}"),
                hoverinfo="text",
            )
    fig.add_vline(x=now.timestamp() * 1000, line={"dash": "dash", "color": "royalblue"})
    fig.update_layout(
        height=380,
        margin={"l": 10, "r": 10, "t": 30, "b": 30},
        yaxis={"title": {"text": "gCO2eq/kWh"}},
        title={
            "text": f"Zones in use: forecast ({', '.join(sorted(sources)) or 'none'}) and each run's "
            "expected mean (dotted)" + (f"; unavailable: {escape('; '.join(missing))}" if missing else "")
        },
    )
    return fig
