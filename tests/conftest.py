"""Fixtures, and the run's timing on its own output: what the suites share besides fixtures lives in
tests/support."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings

from greenops.catalog import load_catalog, select_size
from greenops.models import Decision, Workload
from tests.support.common import NOW, SHARED

pytest_plugins = ["tests.support.release_fixtures"]

# CI runs the property tests on the same examples every time (a failure there is the commit's, never
# the draw's); a developer's run draws new ones, which is how new failing inputs are found: each
# found is kept as a test of its own.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile(os.environ.get("GREENOPS_HYPOTHESIS_PROFILE", "explore"))


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture
def now():
    return NOW


@pytest.fixture
def make_workload():
    def make(**overrides) -> Workload:
        data = {
            "name": "train-1",
            "cpu": 4,
            "memory": 8,
            "duration": "6h",
            "deadline": "2026-11-30T00:00:00Z",
            "originRegion": "italynorth",
            "tenant": "ml",
        }
        data.update(overrides)
        return Workload.model_validate(data, context={"now": NOW})

    return make


@pytest.fixture
def decide(catalog):
    """A Decision for ``workload`` in a catalog region, sized by the catalog, with fixed intensities."""

    def make(workload, provider, region, at=datetime(2026, 11, 25, 2, tzinfo=UTC)):
        r = catalog.region(provider, region)
        return Decision(
            provider=provider,
            region=region,
            zone=r.zone,
            scheduling_time=at,
            vm_size=select_size(catalog, provider, region, workload.cpu, workload.memory).name,
            image=catalog.image(provider, region),
            expected_intensity=50,
            baseline_intensity=200,
        )

    return make


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"raw public data folder {path} is absent (it is never committed)")
    return path


@pytest.fixture(scope="session")
def crd_schemas():
    from greenops.validation import CrdSchemas, default_crd_dir

    folder = default_crd_dir()
    if not folder.is_dir():
        pytest.skip(f"upstream CRD folder {folder} is absent: set GREENOPS_CRD_DIR to validate manifests")
    return CrdSchemas(folder)


@pytest.fixture(autouse=True)
def offline_operator_bundles(monkeypatch):
    """No test downloads Config Connector's pinned release bundle: a small archive with the upstream
    layout stands in (tests/components/bundles.py); tests/components/test_operator_bundle.py tests the
    real download, checksum and cache."""
    from tests.components.bundles import offline_fetch

    monkeypatch.setattr("components.operator_bundle.fetch", offline_fetch)


SLOW_SECONDS = 45.0  # a test slower than this is named as it ends, with the run's elapsed time
_began = time.monotonic()


def pytest_runtest_logreport(report):
    """A slow test is named in the progress output as it ends: a run cut short by its time limit
    still shows where the time went (the durations table comes only at the end)."""
    took = report.duration if report.when == "call" else 0.0
    if took >= SLOW_SECONDS:
        into = time.monotonic() - _began
        print(f"\n[slow] {report.nodeid}: {took:.0f} s ({report.outcome}; {into:.0f} s into the run)")
