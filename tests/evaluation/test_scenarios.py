"""The evaluation harness on a slice of the real traces."""

from __future__ import annotations

import json

import pytest

from greenops.evaluation.scenarios import burst_arrivals, geo_arrivals, nightly_arrivals, run, summarise
from greenops.intensity import SeasonalNaiveSource, TraceSource

pytestmark = pytest.mark.shared_data
DAY = 86400.0


@pytest.fixture(scope="module")
def truth(shared_data):
    return TraceSource.from_directory(shared_data / "greendcc_ci_2023")


def test_geo_scenario_orders_the_policies(truth):
    zones = sorted(truth.zones())
    table = summarise(run(geo_arrivals(zones, 80, seed=5), truth, {"ours": SeasonalNaiveSource(truth, DAY)}))
    assert (
        table["oracle"]["mean_gco2_per_kwh"]
        <= table["ours"]["mean_gco2_per_kwh"]
        < table["baseline"]["mean_gco2_per_kwh"]
    )
    assert table["ours"]["oracle_capture_percent"] >= 90
    assert all(z in zones for z in table["ours"]["placements_per_zone"])
    assert sum(table["ours"]["placements_per_zone"].values()) == 80


def test_capacity_spreads_the_burst(truth):
    zones = sorted(truth.zones())
    forecasts = {"ours": SeasonalNaiveSource(truth, DAY)}
    piled = summarise(run(burst_arrivals(zones, 120), truth, forecasts))
    spread = summarise(run(burst_arrivals(zones, 120), truth, forecasts, capacity_vcpu=64))
    assert len(piled["ours"]["placements_per_zone"]) == 1
    assert len(spread["ours"]["placements_per_zone"]) > 1


def test_nightly_arrivals_cover_the_year():
    arrivals = nightly_arrivals("DE", 2020, 8)
    assert len(arrivals) == 366
    a = arrivals[0]
    assert a.deadline - a.earliest == 16 * 3600 + 1800 and a.duration == 1800


def test_the_command_writes_a_report(shared_data, tmp_path):
    from greenops.evaluation.__main__ import main

    assert main(["--data", str(shared_data), "--out", str(tmp_path), "--jobs", "40", "--burst", "60"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report) >= {"lets_wait_awhile", "geo_temporal", "burst_with_capacity"}
    assert report["lets_wait_awhile"]["DE ±8h"]["published_saving_percent"] == 11.74
    assert report["lets_wait_awhile"]["GB ±2h"]["published_saving_percent"] == 4.77
    assert (tmp_path / "report.png").stat().st_size > 10000
