"""The dashboard's rows from the record's listing: energy counts one job's run per job (not the
span of a whole batch), and the baseline starts where the search began, or at the booking for
answers recorded before that was kept."""

from __future__ import annotations

from greenops.insight.dashboard import views


def reservation(**over) -> dict:
    r = {
        "key": "api/x",
        "tenant": "t",
        "path": "api",
        "phase": "Scheduled",
        "reason": None,
        "zone": "FR",
        "provider": "azure",
        "region": "francecentral",
        "start": "2027-01-10T02:00:00Z",
        "end": "2027-01-10T05:00:00Z",
        "cpu": 2.0,
        "jobs": 2,
        "workload": {"name": "batch", "memory": 4},
        "created_at": "2027-01-09T17:00:00Z",
        "searched_from": "2027-01-09T18:00:00Z",
        "duration_hours": 2.0,
        "answer": {"expected_intensity": 30.0, "baseline_intensity": 60.0, "saving_percent": 50.0},
    }
    return {**r, **over}


def test_a_batch_counts_one_jobs_run_per_job():
    (batch,) = views.placement_rows([reservation()])  # two 2 h jobs, the second starting an hour later
    (single,) = views.placement_rows([reservation(jobs=1, end="2027-01-10T04:00:00Z")])
    assert batch["hours"] == 2.0 and batch["cpu"] == 4.0
    assert batch["energy_kwh"] == 2 * single["energy_kwh"]


def test_the_baseline_starts_where_the_search_began_else_at_the_booking():
    assert views.placement_rows([reservation()])[0]["decidedAt"] == "2027-01-09T18:00:00Z"
    (older,) = views.placement_rows([reservation(searched_from=None, duration_hours=None)])
    assert older["decidedAt"] == "2027-01-09T17:00:00Z" and older["hours"] == 3.0


def test_the_loopback_app_names_a_scheduler_that_is_down_and_refuses_other_hosts():
    from fastapi.testclient import TestClient

    from greenops.common.clock import system_clock
    from greenops.common.httpclient import RetryingClient
    from greenops.insight.dashboard import SchedulerData
    from greenops.insight.dashboard.routes import local_app
    from greenops.local.controlplane import free_port

    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with RetryingClient(down, timeout=1, attempts=1) as scheduler:
        app = local_app(SchedulerData(scheduler), system_clock)
        page = TestClient(app, base_url="http://127.0.0.1").get("/dashboard")
        assert page.status_code == 502 and down in page.text
        assert TestClient(app, base_url="http://127.0.0.1").get("/dashboard/explain/a/b").status_code == 502
        assert TestClient(app, base_url="http://evil.example").get("/dashboard").status_code == 400


LIFECYCLE = {
    "phase": "Running",
    "reason": "running: ready since 2027-01-10T02:20:00Z",
    "gateOpenedAt": "2027-01-10T01:50:00Z",
    "runningSince": "2027-01-10T02:20:00Z",
    "completedAt": None,
    "failedAt": None,
    "replacements": 0,
    "events": [{"at": "2027-01-10T02:22:00Z", "phase": "Running", "reason": "running"}],
}


def test_a_row_takes_its_phase_and_times_from_the_recorded_lifecycle():
    """(greenops.insight.record_rows, the one definition the dashboard and `greenops report --record` share)"""
    (row,) = views.placement_rows([reservation(path="cluster", phase="Provisioning", lifecycle=LIFECYCLE)])
    assert (row["phase"], row["reason"]) == ("Running", LIFECYCLE["reason"])
    assert (row["runningSince"], row["gateOpenedAt"]) == ("2027-01-10T02:20:00Z", "2027-01-10T01:50:00Z")
    assert row["start"] == "2027-01-10T02:00:00Z"  # the decided start stays beside the actual one
    assert row["events"] == LIFECYCLE["events"]
    # a reservation closed by the record (its VmTemplate deleted) is Released, whatever the run had got to
    (gone,) = views.placement_rows(
        [reservation(path="cluster", phase="Released", reason="VmTemplate deleted", lifecycle=LIFECYCLE)]
    )
    assert (gone["phase"], gone["reason"], gone["expected_g"]) == ("Released", "VmTemplate deleted", None)
    assert gone["runningSince"] == "2027-01-10T02:20:00Z"
    # no lifecycle reported (the Pulumi path keeps its own in its stack): the record's phase, no times
    (plain,) = views.placement_rows([reservation(phase="Completed")])
    assert (plain["phase"], plain["runningSince"], plain["events"]) == ("Completed", None, [])


def test_a_rows_eligible_zones_are_policys_as_booked():
    zones = {z: {"provider": "azure", "region": "r", "zone": z, "vmSize": "Standard_F2s_v2"} for z in ("FR", "DE")}
    (row,) = views.placement_rows([reservation(explanation={"constraintChain": [], "zones": zones})])
    assert row["eligibleZones"] == ["DE", "FR"] and row["size"] == "Standard_F2s_v2"
    assert "allowedZonesNote" not in row
    (unexplained,) = views.placement_rows([reservation(explanation=None)])
    assert unexplained["eligibleZones"] == []
    assert unexplained["allowedZonesNote"] == "policy's zones not read: its booking holds none"


def test_the_report_shows_a_gate_opened_after_its_start_as_late():
    from greenops.insight import report

    late = {"workload": "w", "gateOpenedAt": "2026-01-01T00:00:20Z", "start": "2026-01-01T00:00:00Z"}
    on_time = {"workload": "v", "gateOpenedAt": "2025-12-31T23:55:00Z", "start": "2026-01-01T00:00:00Z"}
    assert (
        report.late_gate(late)
        == "gate late: opened at 2026-01-01T00:00:20Z, 20 s after the decided start 2026-01-01T00:00:00Z"
    )
    assert report.late_gate(on_time) is None
    table = report.table(report.account([late, on_time]))
    assert "  w: gate late: opened at" in table and "  v: gate late" not in table
