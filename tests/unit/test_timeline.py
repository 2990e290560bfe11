"""The placements timeline: one readable row per workload at 6 and at 60, the clock it draws as now
is GREENOPS_NOW, and deadlines far beyond the runs are written rather than stretching the axis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import matplotlib.dates as mdates
import pytest

from greenops.insight import timeline
from tests.support.engine import iso

T0 = datetime(2026, 11, 22, 17, tzinfo=UTC)
ZONES = ["DE", "GB", "FR", "CA-QC", "SE-SE3", "US-CAL-CISO"]


def rows(n: int) -> list[dict]:
    out = []
    for i in range(n):
        wait, hours = (0, 3, 9, 14)[i % 4], (1, 2, 3, 6)[i % 4]
        out.append(
            {
                "workload": f"workload-{i:02d}-nightly-etl",
                "zone": ZONES[i % len(ZONES)],
                "hours": hours,
                "start": iso(T0 + timedelta(hours=wait)),
                "decidedAt": iso(T0),
                "phase": "Scheduled",
                "deadline": iso(T0 + timedelta(hours=wait + hours + (4 if i % 2 else 24 * 200))),
            }
        )
    return out


def overlaps(boxes) -> list[tuple[int, int]]:
    return [(i, i + 1) for i, (a, b) in enumerate(pairwise(boxes)) if a.overlaps(b)]


@pytest.mark.parametrize("n", [6, 60])
def test_one_readable_row_per_workload(n, tmp_path):
    fig = timeline.figure(rows(n), now=T0)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [f"workload-{i:02d}-nightly-etl  ({ZONES[i % len(ZONES)]})" for i in range(n)]
    renderer = fig.canvas.get_renderer()
    assert overlaps([t.get_window_extent(renderer) for t in ax.get_yticklabels()]) == []
    for t in ax.get_yticklabels():  # none is cut off at the figure's edge
        assert t.get_window_extent(renderer).x0 >= 0
    assert timeline.plot(rows(n), tmp_path / "t.png", now=T0).stat().st_size > 10_000


def test_now_is_the_platform_clock(monkeypatch):
    monkeypatch.setenv("GREENOPS_NOW", "2026-11-23T04:30:00Z")
    ax = timeline.figure(rows(6)).axes[0]
    nows = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(nows) == 1
    x = nows[0].get_xdata()[0]
    when = mdates.num2date(x) if isinstance(x, float) else x
    assert when == datetime(2026, 11, 23, 4, 30, tzinfo=UTC)


def test_far_deadlines_are_written_not_drawn():
    fig = timeline.figure(rows(6), now=T0)
    ax = fig.axes[0]
    right = mdates.num2date(ax.get_xlim()[1])
    assert right < T0 + timedelta(days=2)  # the 200-day deadlines do not stretch the axis
    written = [t.get_text() for t in ax.texts if t.get_text().startswith("deadline ")]
    assert written == [
        f"deadline {(T0 + timedelta(hours=w + h + 24 * 200)):%Y-%m-%d}" for w, h in ((0, 1), (9, 3), (0, 1))
    ]
