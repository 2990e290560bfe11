"""The forecasting suites' inputs: a slice of the real traces, and the champion
(``greenops-forecast train`` for one zone on them)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from greenops.intensity.traces import EM_TIME


def train_germany(tracking_uri: str, traces: Path, report: Path) -> int:
    """``greenops-forecast train`` for DE on ``traces``, held out from 20 March 2023, against the
    registry at ``tracking_uri``: the champion the integration tests serve or publish."""
    from greenops.cli import forecast as cli

    args = ["--tracking-uri", tracking_uri, "train", "--traces", str(traces), "--zones", "DE"]
    return cli.main([*args, "--holdout-from", "2023-03-20", "--out", str(report), "--plot-zones", "DE"])


def write_slice(source: Path, dest: Path, zones: list[str], until: str) -> Path:
    """Real trace rows up to ``until`` for ``zones``, in the Electricity Maps CSV format they came in."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("*.csv")):
        df = pd.read_csv(path)
        if str(df["Zone Id"].iloc[0]) not in zones:
            continue
        keep = pd.to_datetime(df[EM_TIME], utc=True) < pd.Timestamp(until, tz="UTC")
        df[keep].to_csv(dest / path.name, index=False)
    return dest
