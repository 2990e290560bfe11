from __future__ import annotations

from pathlib import Path

import pytest

from greenops.intensity import TraceSource
from tests.support.forecasters import write_slice


@pytest.fixture(scope="session")
def traces_2023(shared_data) -> Path:
    folder = shared_data / "greendcc_ci_2023"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: the 2023 Electricity Maps traces are needed")
    return folder


@pytest.fixture(scope="session")
def spring_slice(traces_2023, tmp_path_factory) -> Path:
    """DE and GB, January to mid-April 2023: small enough to train in a second."""
    return write_slice(traces_2023, tmp_path_factory.mktemp("traces"), ["DE", "GB"], "2023-04-15")


@pytest.fixture(scope="session")
def spring_traces(spring_slice) -> TraceSource:
    return TraceSource.from_directory(spring_slice)
