"""The public 2023 traces the report suite checks against: as the product reads them, and
independently with pandas."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from greenops.intensity import TraceSource
from greenops.intensity.traces import EM_TIME, EM_VALUES
from tests.support.report_rows import TRACE_FILES


@pytest.fixture(scope="session")
def traces(shared_data: Path) -> Path:
    folder = shared_data / "greendcc_ci_2023"
    missing = [f for f in TRACE_FILES.values() if not (folder / f).is_file()]
    if missing:
        pytest.skip(f"the Electricity Maps 2023 traces {missing} are not in {folder}")
    return folder


@pytest.fixture(scope="session")
def history(traces: Path) -> TraceSource:
    return TraceSource.from_directory(traces)


@pytest.fixture(scope="session")
def by_minute(traces: Path) -> dict[str, pd.Series]:
    """Each zone's trace at one-minute resolution, each hour's value held over its hour: means
    over whole minutes are then plain averages, with no window arithmetic of the product's."""
    out = {}
    for zone, name in TRACE_FILES.items():
        df = pd.read_csv(traces / name)
        hourly = pd.Series(df[EM_VALUES[0]].to_numpy(float), index=pd.to_datetime(df[EM_TIME], utc=True))
        out[zone] = hourly.resample("1min").ffill()
    return out
