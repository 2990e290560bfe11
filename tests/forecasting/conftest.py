from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from greenops.intensity import TraceSource
from greenops.intensity.traces import EM_TIME


@pytest.fixture(scope="session")
def traces_2023(shared_data) -> Path:
    folder = shared_data / "greendcc_ci_2023"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: the 2023 Electricity Maps traces are needed")
    return folder


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


@pytest.fixture(scope="session")
def spring_slice(traces_2023, tmp_path_factory) -> Path:
    """DE and GB, January to mid-April 2023: small enough to train in a second."""
    return write_slice(traces_2023, tmp_path_factory.mktemp("traces"), ["DE", "GB"], "2023-04-15")


@pytest.fixture(scope="session")
def spring_traces(spring_slice) -> TraceSource:
    return TraceSource.from_directory(spring_slice)


def require_mlserver() -> str:
    from greenops.common.toolpaths import ToolMissing, mlserver_path

    try:
        return mlserver_path()
    except ToolMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def train_germany(tracking_uri: str, traces: Path, report: Path) -> int:
    """``greenops-forecast train`` for DE on ``traces``, held out from 20 March 2023, against the
    registry at ``tracking_uri``: the champion the integration tests serve or publish."""
    from greenops.cli import forecast as cli

    args = ["--tracking-uri", tracking_uri, "train", "--traces", str(traces), "--zones", "DE"]
    return cli.main([*args, "--holdout-from", "2023-03-20", "--out", str(report), "--plot-zones", "DE"])
