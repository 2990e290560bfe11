"""Forecast-driven capture on LWA's set-up: the oracle, the forecasters, and the sure rule that must
never do worse than running every job at its nominal time, on average, per country."""

from __future__ import annotations

import json

import numpy as np
import pytest

from greenops.evaluation import capture
from greenops.evaluation.lwa import FILES, STEP
from greenops.evaluation.lwa_gap import saving
from greenops.intensity import SeasonalNaiveSource, TraceSource
from greenops.intensity.traces import read_lwa_csv
from greenops.search.algorithm import CapacityLedger, Job, decide
from greenops.search.track import track_record

pytestmark = pytest.mark.shared_data
H = 3600.0


@pytest.fixture(scope="module")
def data(shared_data):
    missing = [name for name in FILES.values() if not (shared_data / name).is_file()]
    if missing or not (shared_data / "greendcc_ci_2023").is_dir():
        pytest.skip(f"the Let's Wait Awhile traces {missing} or the 2023 traces are not in {shared_data}")
    return shared_data


@pytest.fixture(scope="module")
def report(data, tmp_path_factory):
    """The command as `make eval` runs it (the models trained in-process), with a short held-out run."""
    from greenops.evaluation.__main__ import main

    out = tmp_path_factory.mktemp("capture")
    assert main(["--scenario", "capture", "--data", str(data), "--out", str(out), "--holdout-jobs", "40"]) == 0
    return json.loads((out / "capture.json").read_text())


def test_the_table_covers_every_country_forecaster_and_rule(report):
    forecasters = ["naive 24h", "naive 7d", "mean 7d", "model (in-process)"]
    for country in FILES:
        for window in ("±2h", "±8h"):
            rows = report["countries"][country][window]
            assert set(rows) == {"oracle"} | {f"{f} / {r}" for f in forecasters for r in ("point", "interval", "sure")}
            assert all(r["unforecast"] == 0 for name, r in rows.items() if name != "oracle")
    assert set(report["holdout_2023"]["policies"]) >= {"oracle", "model (in-process) / sure", "mean 7d / point"}
    # the target, judged per country; DE's solar dip is foreseeable, so DE meets it
    assert set(report["target"]) == set(FILES) and report["target"]["DE"]["met"]


def test_the_oracle_is_lwa_without_noise_and_without_its_first_job_quirk(report, data):
    # the same set-up as the gap analysis's: LWA's samples and 365 jobs, history before 2020 kept
    for country, name in FILES.items():
        raw = read_lwa_csv(data / name)
        for hours in capture.WINDOW_HOURS:
            expected = saving(raw, country, capture.HISTORY, 2 * hours)
            assert report["countries"][country][f"±{hours}h"]["oracle"]["saving_percent"] == pytest.approx(
                expected, abs=1e-3
            )


def test_the_sure_rule_never_loses_to_the_nominal_run_on_average_per_country(report):
    for country in FILES:
        cells = [
            r["saving_percent"]
            for window in ("±2h", "±8h")
            for name, r in report["countries"][country][window].items()
            if name.endswith("/ sure")
        ]
        assert np.mean(cells) > 0, (country, cells)
        # no single forecaster and window loses more than 0.05 points (DE ±2h with a naive forecast
        # loses 0.03: 8 to 17 of 365 jobs moved, on an oracle saving of 2.5 %; see the README)
        assert min(cells) > -0.05, (country, cells)
    # and it is needed: repeating yesterday moves GB's and FR's jobs the wrong way at ±8 h
    for country in ("GB", "FR"):
        rows = report["countries"][country]["±8h"]
        assert rows["naive 24h / point"]["saving_percent"] < 0 < rows["naive 24h / sure"]["saving_percent"]


def test_the_held_out_2023_rule_loses_nowhere(report):
    for name, row in report["holdout_2023"]["policies"].items():
        if name.endswith("/ sure"):
            assert row["saving_percent"] > 0 and row["origins_worse_than_running_at_once"] == [], name


def test_the_tables_record_is_the_schedulers_record(data):
    # forecast_starts decides every night once and reads each job's record off the nights before;
    # sources.track replays a single request. They must agree, job by job.
    truth = capture.truths(data)["GB"]
    source = SeasonalNaiveSource(TraceSource({"GB": truth}))
    nominals = capture.nominals_for("GB", capture.HISTORY)[100:130]
    window = 8 * H
    starts, _ = capture.forecast_starts(source, truth, "GB", nominals, window)
    job = Job(cpu=1, memory=1, duration=STEP)
    for nominal, chosen in zip(nominals, starts["sure"], strict=True):
        opens, deadline = float(nominal) - window, float(nominal) + window + STEP
        track = track_record(source, ["GB"], job, opens, deadline, opens, "GB", float(nominal))
        forecast = {"GB": source.series("GB", opens, deadline, opens)}
        one = decide(forecast, job, opens, deadline, CapacityLedger(), "sure", None, "GB", float(nominal), track=track)
        assert one.start == chosen
    assert (starts["sure"] != nominals).any() and (starts["sure"] == nominals).any()
