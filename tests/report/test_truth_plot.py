"""The report's plot of completed runs: the expected, actual and oracle windows drawn where the
record and the history put them, now at GREENOPS_NOW, and a PNG written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import matplotlib.dates as mdates
import pytest

from greenops.common.clock import parse_time
from greenops.insight import hindsight, report, timeline
from greenops.placing.lifecycle import Phase
from tests.support.report_rows import HOURS, RAN_FROM, START, row

pytestmark = pytest.mark.shared_data
NOW = datetime(2023, 3, 15, 9, 45, tzinfo=UTC)


@pytest.fixture
def rows(history):
    placed = {**row("etl", Phase.COMPLETED), "eligibleZones": ["DE", "GB"]}
    waiting = row("waiting", Phase.SCHEDULED, since=None, done=None)
    return report.account(hindsight.with_truth([placed, waiting], history))


def span(patch) -> tuple[datetime, datetime]:
    left = mdates.num2date(patch.get_x())
    return left, mdates.num2date(patch.get_x() + patch.get_width())


def close(a: datetime, b: datetime) -> bool:
    return abs(a - b) < timedelta(seconds=1)  # matplotlib's day floats hold about 10 µs


def test_the_three_windows_are_where_the_record_and_the_history_put_them(rows, monkeypatch):
    monkeypatch.setenv("GREENOPS_NOW", "2023-03-15T09:45:00Z")
    ax = timeline.figure(rows).axes[0]
    bars = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    assert set(bars) == {"expected:etl", "actual:etl", "oracle:etl", "expected:waiting"}  # none for a planned run
    run = timedelta(hours=HOURS)
    oracle_start = parse_time(rows[0]["oracleStart"])
    for gid, (a, b) in {
        "expected:etl": (START, START + run),
        "actual:etl": (RAN_FROM, RAN_FROM + run),
        "oracle:etl": (oracle_start, oracle_start + run),
    }.items():
        got = span(bars[gid])
        assert close(got[0], a) and close(got[1], b), (gid, got)
    # the three are told apart: the oracle outlined and dashed, the actual run filled
    assert bars["oracle:etl"].get_linestyle() == "--" and bars["oracle:etl"].get_facecolor()[3] == 0
    assert bars["actual:etl"].get_facecolor()[3] == 1
    assert rows[0]["oracleZone"] == "GB"  # written beside its window, not being the placed zone
    assert "oracle: GB" in [t.get_text() for t in ax.texts]
    labels = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    assert {"chosen window (expected)", "actual run (history's mean)", "oracle: best in hindsight"} <= {*labels}
    assert "now 2023-03-15 09:45Z" in labels
    (now_line,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    x = now_line.get_xdata()[0]  # axvline keeps the datetime it was given
    assert (mdates.num2date(x) if isinstance(x, float) else x) == NOW


def test_the_report_writes_the_png_at_the_platform_clock(rows, monkeypatch, tmp_path):
    monkeypatch.setenv("GREENOPS_NOW", "2023-03-15T09:45:00Z")
    path = report.plot(rows, tmp_path / "report" / "placements.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
