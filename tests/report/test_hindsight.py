"""``greenops report`` in hindsight, on the recorded 2023 traces: each completed run's actual
intensity over its real run and the oracle's best window and zone, checked against pandas on the
same traces; only completed runs are judged and counted; a run the history does not cover says why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import parse_time
from greenops.insight import hindsight, report
from greenops.intensity import TraceSource
from greenops.placing.lifecycle import Phase
from tests.support.report_rows import DEADLINE, DECIDED, HOURS, RAN_FROM, START, mean_over, row

pytestmark = pytest.mark.shared_data
RUN = timedelta(hours=HOURS)


def oracle_by_pandas(by_minute, zones: list[str]) -> float:
    """The lowest mean over any 3 h window starting on a minute in [decided, deadline - 3 h]: the
    optimum lies on a minute here (hourly data, whole-minute bounds and duration)."""
    best = []
    for zone in zones:
        s = by_minute[zone]
        s = s[(s.index >= DECIDED) & (s.index < DEADLINE)]
        best.append(s.rolling(int(RUN.total_seconds() // 60)).mean().min())
    return float(min(best))


def test_actual_is_the_zones_mean_over_the_real_run(history, by_minute):
    truth = hindsight.truth(row("etl", Phase.COMPLETED), history)
    # the run as it happened: from the operator's ready time, for its duration (not to the retiring pass)
    assert (truth["actualFrom"], truth["actualTo"]) == ("2023-03-15T02:20:00Z", "2023-03-15T05:20:00Z")
    assert truth["actual"] == round(mean_over(by_minute["DE"], RAN_FROM, RAN_FROM + RUN), 2)


def test_oracle_is_the_best_window_in_hindsight_over_the_allowed_zones(history, by_minute):
    placed = {**row("etl", Phase.COMPLETED), "eligibleZones": ["DE", "GB"]}
    truth = hindsight.truth(placed, history)
    best = oracle_by_pandas(by_minute, ["DE", "GB"])
    assert truth["oracle"] == pytest.approx(best, abs=0.005)  # rounded to the hundredth, as reported
    start = parse_time(truth["oracleStart"])
    assert DECIDED <= start <= DEADLINE - RUN
    assert mean_over(by_minute[truth["oracleZone"]], start, start + RUN) == pytest.approx(best, abs=1e-9)
    # nothing beats it: not the run as it happened, nor the decided window, nor the placed zone alone
    assert truth["oracle"] <= truth["actual"]
    assert truth["oracle"] <= mean_over(by_minute["DE"], START, START + RUN)
    assert truth["oracle"] <= oracle_by_pandas(by_minute, ["DE"])
    assert truth["truthNote"] is None


def test_without_the_allowed_set_the_oracle_is_when_not_where_and_says_so(history, by_minute):
    truth = hindsight.truth(row("etl", Phase.COMPLETED), history)
    assert truth["oracleZone"] == "DE"
    assert truth["oracle"] == pytest.approx(oracle_by_pandas(by_minute, ["DE"]), abs=0.005)
    assert truth["truthNote"] == hindsight.PLACED_ZONE_ONLY


def test_only_completed_runs_are_judged_and_counted(history, by_minute):
    rows = [
        row("etl", Phase.COMPLETED),
        row("still-running", Phase.RUNNING, done=None),
        row("missed", Phase.FAILED, since=None, done=None),
        row("waiting", Phase.SCHEDULED, since=None, done=None),
    ]
    accounted = {r["workload"]: r for r in report.account(hindsight.with_truth(rows, history))}
    done = accounted["etl"]
    # the same CCF energy as expected and baseline
    assert done["actual_g"] == round(done["energy_kwh"] * done["actual"], 1) != round(done["energy_kwh"] * 250.0, 1)
    assert done["oracle_g"] is not None and done["oracle_g"] <= done["actual_g"]
    for name in ("still-running", "missed", "waiting"):
        r = accounted[name]
        assert (r["actual"], r["oracle"], r["actual_g"], r["oracle_g"]) == (None, None, None, None), name
    assert accounted["missed"]["expected_g"] is None  # a failed run counts nothing at all

    text = report.table(list(accounted.values()))
    # the cells as -o json prints them (the table wraps its 19 columns within 100)
    shown = {r["workload"]: r for r in report.document(list(accounted.values()))}
    assert (shown["etl"]["actual"], shown["etl"]["oracle"]) == (done["actual"], done["oracle"])
    assert shown["etl"]["oracleZone"] == "DE"
    for name in ("still-running", "missed", "waiting"):
        cells = shown[name]
        assert (cells["actual"], cells["oracle"], cells["actual_g"], cells["oracle_g"]) == (None, None, None, None)
    e, b = done["expected_g"] / 1000, done["baseline_g"] / 1000
    assert (
        f"completed, actual: {done['actual_g'] / 1000:.3f} kgCO2e against {e:.3f} expected and {b:.3f} baseline "
        "over the same 1 of 1 workloads (history: traces)"
    ) in text
    assert f"completed, oracle: {done['oracle_g'] / 1000:.3f} kgCO2e against {e:.3f} expected" in text
    assert "failed: missed (nothing counted)" in text


def test_a_run_the_history_does_not_cover_says_why_and_the_rest_stands(history):
    later = datetime(2027, 3, 15, 2, tzinfo=UTC)  # the traces end with 2023
    rows = [
        row("etl", Phase.COMPLETED),
        row(
            "in-2027",
            Phase.COMPLETED,
            start=later,
            since=later,
            done=later + RUN,
            decided=later - timedelta(hours=9),
            deadline=later + timedelta(hours=10),
        ),
        row("in-paris", Phase.COMPLETED, zone="FR", region="europe-west9"),
    ]
    accounted = {r["workload"]: r for r in report.account(hindsight.with_truth(rows, history))}
    assert accounted["in-2027"]["actual"] is None and accounted["in-2027"]["oracle"] is None
    assert (
        "actual unknown: the trace for zone DE does not cover the requested period"
        in (accounted["in-2027"]["truthNote"])
    )
    assert "actual unknown: no trace for zone FR" in accounted["in-paris"]["truthNote"]
    assert "oracle unknown: no allowed zone has history over its window" in accounted["in-paris"]["truthNote"]
    assert accounted["in-paris"]["expected_g"] is not None  # what was expected and planned still counts
    text = report.table(list(accounted.values()))
    assert "  in-paris: in hindsight, actual unknown: no trace for zone FR" in text
    assert "over the same 1 of 3 workloads" in text


def test_the_oracle_leaves_out_an_allowed_zone_without_history_and_names_it(history, by_minute):
    placed = {**row("etl", Phase.COMPLETED), "eligibleZones": ["DE", "FR"]}
    truth = hindsight.truth(placed, history)
    assert truth["oracle"] == pytest.approx(oracle_by_pandas(by_minute, ["DE"]), abs=0.005)
    assert truth["truthNote"] == "oracle leaves out FR: no trace for zone FR"


def test_the_oracle_starts_from_the_first_placement_of_a_replaced_run(history, by_minute):
    """A re-placed run keeps its first placement's events: it could have run from then."""
    first = DECIDED - timedelta(hours=6)
    replaced = row("etl", Phase.COMPLETED)
    replaced["events"] = [{"at": "2023-03-14T11:00:00Z", "phase": "Scheduled", "reason": "placed"}, *replaced["events"]]
    assert hindsight.earliest_start(replaced) == first
    truth = hindsight.truth(replaced, history)
    s = by_minute["DE"]
    s = s[(s.index >= first) & (s.index < DEADLINE)]
    assert truth["oracle"] == pytest.approx(float(s.rolling(HOURS * 60).mean().min()), abs=0.005)


def test_no_history_at_all_is_a_reason_on_each_completed_row():
    from greenops.insight.carbon_history import NoHistory

    rows = hindsight.with_truth([row("etl", Phase.COMPLETED)], NoHistory("no traces here"))
    assert rows[0]["actual"] is None
    assert rows[0]["truthNote"].startswith("actual unknown: no traces here; oracle leaves out DE: no traces here")
    text = report.table(report.account(rows))
    assert "completed, actual: unknown for all 1 workloads (see the notes above)" in text
    assert "completed, oracle: unknown for all 1 workloads" in text


def test_a_trace_of_one_zone_is_enough(by_minute):
    """The recorded trace alone (one zone, two days) gives the same figures as the whole folder."""
    from greenops.intensity.series import Series

    day = by_minute["DE"][(by_minute["DE"].index >= DECIDED) & (by_minute["DE"].index < DEADLINE + RUN)]
    source = TraceSource({"DE": Series.from_pandas(day.resample("1h").first())})
    truth = hindsight.truth(row("etl", Phase.COMPLETED), source)
    assert truth["actual"] == round(mean_over(by_minute["DE"], RAN_FROM, RAN_FROM + RUN), 2)


def recorded_reservation(zones: list[str]) -> dict:
    """A reservation as the scheduler's record lists it, with policy's explanation kept."""
    return {
        "key": "dev/etl/abc",
        "path": "pulumi",
        "phase": "Completed",
        "tenant": "t",
        "created_at": "2023-03-14T17:00:00.123Z",
        "answer": {"scheduling_location": "DE", "scheduling_time": "2023-03-15T02:00:00Z", "expected_intensity": 250.0},
        "explanation": {"zones": {z: {"provider": "gcp", "region": "r", "zone": z, "vmSize": "s"} for z in zones}},
    }


def test_policy_zones_from_the_scheduler_record_widen_the_oracle(history, by_minute):
    from greenops.common.errors import GreenOpsError
    from greenops.insight import explain

    def unreachable(name: str) -> list[str]:
        raise GreenOpsError(f"workload {name!r}: no reservation under dev/{name}/…")

    rows = [row("etl", Phase.COMPLETED), row("waiting", Phase.SCHEDULED, since=None, done=None)]
    booked = hindsight.with_allowed_zones(
        rows, lambda name: explain.account(recorded_reservation(["GB", "DE"]))["eligibleZones"]
    )
    assert booked[0]["eligibleZones"] == ["DE", "GB"] and "eligibleZones" not in booked[1]  # only completed runs
    truth = hindsight.truth(booked[0], history)
    assert truth["oracle"] == pytest.approx(oracle_by_pandas(by_minute, ["DE", "GB"]), abs=0.005)
    assert truth["truthNote"] is None

    (missing,) = hindsight.with_allowed_zones(rows[:1], unreachable)
    assert hindsight.truth(missing, history)["truthNote"] == (
        f"{hindsight.PLACED_ZONE_ONLY}; policy's zones not read: workload 'etl': no reservation under dev/etl/…"
    )
    (unexplained,) = hindsight.with_allowed_zones(
        rows[:1], lambda name: explain.account(recorded_reservation([]))["eligibleZones"]
    )
    assert "policy's zones not read: its booking holds none" in hindsight.truth(unexplained, history)["truthNote"]
