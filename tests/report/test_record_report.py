"""The cluster path's runs in the report, the dashboard and ``greenops explain``, from the scheduler's
record on loopback: VmTemplates booked as OPA's webhook books them (with the workload and policy's
explanation), their lifecycle reported as the controller reports it (PATCH, report role) through
Scheduled -> Provisioning -> Running -> Completed with real times on the public 2023 traces. The
completed run is judged from its recorded actual start over policy's zones; a failed and a released
one count nothing; a Pulumi-path booking that reported only its phase says why it cannot be judged."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import httpx
import pytest
import yaml

from greenops.cli import main
from greenops.common.clock import parse_time, stamp
from greenops.common.httpclient import RetryingClient
from greenops.insight import explain, hindsight, record_rows, report
from greenops.local.scheduler import SchedulerServer
from greenops.placing.lifecycle import Lifecycle, Phase
from tests.support.report_rows import DEADLINE, DECIDED, HOURS, mean_over

pytestmark = [pytest.mark.integration, pytest.mark.shared_data]
RUN = timedelta(hours=HOURS)
NAMESPACE = "analytics"
DONE = f"{NAMESPACE}/etl-nightly/0b6c3c52-5f43-4b8e-9f1e-3f1f4f8b0a01"
MISSED = f"{NAMESPACE}/render-missed/0b6c3c52-5f43-4b8e-9f1e-3f1f4f8b0a02"
DELETED = f"{NAMESPACE}/deleted-vm/0b6c3c52-5f43-4b8e-9f1e-3f1f4f8b0a03"
PULUMI = "dev/etl-stack/6f1d2e"
HOSTILE = "the operator says: <b>quota exceeded</b>"  # the users' (and operators') text: shown, never markup
ZONES = {"DE": "europe-west3", "GB": "europe-west2"}


def vmtemplate_booking(name: str, path: str = "cluster") -> dict:
    """What OPA's webhook sends the scheduler for an admitted VmTemplate: the thesis body, the
    tenant and path, the zones' regions, the normalised workload and policy's explanation."""
    deadline = stamp(DEADLINE)
    return {
        "eligible_regions": list(ZONES),
        "deadline": deadline,
        "duration": HOURS,
        "cpu": 4,
        "memory": 16,
        "tenant": NAMESPACE,
        "path": path,
        "regions": {z: f"gcp/{r}" for z, r in ZONES.items()},
        "workload": {
            "name": name,
            "cpu": 4,
            "memory": 16,
            "durationHours": HOURS,
            "deadline": deadline,
            "maxLatency": 2000,
            "originRegion": "europe-west3",
            "eligibleProviders": ["gcp"],
            "dataResidency": "eu",
            "tenant": NAMESPACE,
        },
        "explanation": {
            "constraintChain": [
                {"constraint": "providers gcp", "remaining": 40},
                {"constraint": "dataResidency eu", "remaining": 2},
            ],
            "zones": {
                z: {"provider": "gcp", "region": r, "zone": z, "vmSize": "e2-standard-4", "latencyMs": 12}
                for z, r in ZONES.items()
            },
        },
    }


@dataclass
class Record:
    sched: SchedulerServer
    reader: str
    starts: dict[str, datetime] = field(default_factory=dict)  # each key's decided start
    lifecycles: dict[str, Lifecycle] = field(default_factory=dict)  # as reported last

    def call(self, method: str, path: str, token: str, **kw: object) -> httpx.Response:
        r = httpx.request(  # type: ignore[arg-type]
            method, f"{self.sched.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=15, **kw
        )
        assert r.is_success, r.text
        return r


def report_lifecycle(rec: Record, token: str, key: str, lc: Lifecycle, **extra: object) -> None:
    """The controller's PATCH: the phase (Scheduled is no reportable phase: the lifecycle alone)."""
    body: dict = {"lifecycle": lc.document(), **extra}
    if lc.phase is not Phase.SCHEDULED:
        body.update(phase=lc.phase.value, reason=lc.reason)
    rec.call("PATCH", f"/reservations/{key}", token, json=body)
    rec.lifecycles[key] = lc


@pytest.fixture(scope="module")
def record(tmp_path_factory, traces) -> Iterator[Record]:
    log = tmp_path_factory.mktemp("record-report") / "scheduler.log"
    # the scheduler's clock in the traces' period: it decides at DECIDED, the controller reports later times
    with SchedulerServer(log=log, env={"GREENOPS_NOW": stamp(DECIDED)}) as sched:
        opa = sched.issue("opa", None, paths=["cluster"])
        controller = sched.issue("controller", None, paths=["cluster"], role="report")
        stack = sched.issue("dev-stack", [NAMESPACE], paths=["pulumi"])
        rec = Record(sched, reader=sched.issue("on-call", None, paths=["api"], role="read"))
        for key in (DONE, MISSED, DELETED):
            answer = rec.call("PUT", f"/reservations/{key}", opa, json=vmtemplate_booking(key.split("/")[1])).json()
            rec.starts[key] = parse_time(answer["scheduling_time"])
            report_lifecycle(rec, controller, key, Lifecycle.placed(DECIDED, "admitted"), confirm=True)

        # the run that completed: the gate opened 10 min before its start, the operator reported the
        # VM ready 20 min after it, and the retiring pass came by 4 min after its end
        start = rec.starts[DONE]
        gate, since = start - timedelta(minutes=10), start + timedelta(minutes=20)
        lc = rec.lifecycles[DONE].to(Phase.PROVISIONING, gate, "gate opened", gate_opened_at=gate)
        report_lifecycle(rec, controller, DONE, lc)
        lc = lc.to(
            Phase.RUNNING, since + timedelta(minutes=2), f"running: ready since {stamp(since)}", running_since=since
        )
        report_lifecycle(rec, controller, DONE, lc)
        retired = since + RUN + timedelta(minutes=4)
        lc = lc.to(Phase.COMPLETED, retired, f"completed: ran 3h from {stamp(since)}", completed_at=retired)
        report_lifecycle(rec, controller, DONE, lc)

        # never ready before its last start: failed with the operator's (hostile) words
        start = rec.starts[MISSED]
        gate, failed = start - timedelta(minutes=10), DEADLINE - RUN + timedelta(minutes=1)
        lc = rec.lifecycles[MISSED].to(Phase.PROVISIONING, gate, "gate opened", gate_opened_at=gate)
        report_lifecycle(rec, controller, MISSED, lc)
        report_lifecycle(rec, controller, MISSED, lc.to(Phase.FAILED, failed, HOSTILE, failed_at=failed))

        # deleted while it ran: released, with where the run had got to
        start = rec.starts[DELETED]
        lc = rec.lifecycles[DELETED].to(Phase.PROVISIONING, start, "gate opened", gate_opened_at=start)
        lc = lc.to(Phase.RUNNING, start, "running", running_since=start)
        report_lifecycle(rec, controller, DELETED, lc)
        rec.call("DELETE", f"/reservations/{DELETED}", controller, params={"reason": "VmTemplate deleted"})

        # a Pulumi-path booking reports its phase only: its lifecycle is in its stack
        rec.call("PUT", f"/reservations/{PULUMI}", stack, json=vmtemplate_booking("etl-stack", path="pulumi"))
        rec.call("PATCH", f"/reservations/{PULUMI}", stack, json={"phase": "Completed", "reason": "retired"})
        yield rec


def oracle_by_pandas(by_minute, zones: list[str]) -> float:
    """The lowest mean over any run-long window from the decision to the deadline, in ``zones``."""
    means = []
    for zone in zones:
        s = by_minute[zone]
        s = s[(s.index >= DECIDED) & (s.index < DEADLINE)]
        means.append(s.rolling(int(RUN.total_seconds() // 60)).mean().min())
    return float(min(means))


@pytest.fixture
def judged(record, history) -> dict[str, dict]:
    with RetryingClient(record.sched.url, token=record.reader) as scheduler:
        rows = record_rows.listed(scheduler, path="cluster")
    return {r["key"]: r for r in report.account(hindsight.with_truth(rows, history))}


def test_a_completed_cluster_run_is_judged_from_its_recorded_start_over_policys_zones(record, judged, by_minute):
    done = judged[DONE]
    since = record.lifecycles[DONE].running_since
    assert since is not None
    assert (done["path"], done["workload"], done["phase"]) == ("cluster", "etl-nightly", "Completed")
    # the lifecycle's times, as the controller reported them, not the decided window
    assert done["runningSince"] == stamp(since) != stamp(record.starts[DONE])
    assert done["gateOpenedAt"] == stamp(record.starts[DONE] - timedelta(minutes=10))
    assert done["completedAt"] == stamp(since + RUN + timedelta(minutes=4))
    assert [e["phase"] for e in done["events"]] == ["Scheduled", "Provisioning", "Running", "Completed"]
    assert (done["actualFrom"], done["actualTo"]) == (stamp(since), stamp(since + RUN))
    assert done["actual"] == round(mean_over(by_minute[done["zone"]], since, since + RUN), 2)
    # policy's zones from the booking's explanation: the oracle searched both, and says no limit
    assert done["eligibleZones"] == ["DE", "GB"]
    assert done["oracle"] is not None and done["oracle"] <= done["actual"]
    assert done["oracle"] == pytest.approx(oracle_by_pandas(by_minute, ["DE", "GB"]), abs=0.005)
    assert done["truthNote"] is None
    assert done["actual_g"] == pytest.approx(done["energy_kwh"] * done["actual"], abs=0.1)  # (kWh shown rounded)
    assert done["oracle_g"] is not None and done["oracle_g"] <= done["actual_g"]
    assert (done["size"], done["provider"]) == ("e2-standard-4", "gcp")


def test_failed_and_released_cluster_runs_count_nothing(judged):
    missed, deleted = judged[MISSED], judged[DELETED]
    assert (missed["phase"], missed["reason"], missed["failedAt"]) == (
        "Failed",
        HOSTILE,
        stamp(DEADLINE - RUN + timedelta(minutes=1)),
    )
    # released while it ran: the record's verdict, the lifecycle's times kept
    assert (deleted["phase"], deleted["reason"]) == ("Released", "VmTemplate deleted")
    assert deleted["runningSince"] is not None
    for r in (missed, deleted):
        assert all(r[k] is None for k in report.GRAMS), r["key"]
        assert (r["actual"], r["oracle"]) == (None, None)


def test_greenops_report_from_the_record(record, judged, traces, monkeypatch, capsys):
    monkeypatch.setenv("GREENOPS_SCHEDULER_TOKEN", record.reader)
    monkeypatch.delenv("ELECTRICITYMAPS_TOKEN", raising=False)
    argv = ["report", "--record", "--scheduler-url", record.sched.url, "--traces", str(traces)]
    code = main(argv)
    assert code == 0
    text = capsys.readouterr().out
    assert "completed, actual: " in text and "over the same 1 of 1 workloads (history: traces)" in text
    assert "failed: render-missed (nothing counted)" in text
    assert "etl-stack" not in text  # the cluster path by default
    # the cells, as -o json prints them (the table cuts what does not fit its 100 columns)
    assert main([*argv, "-o", "json"]) == 0
    rows = {r["workload"]: r for r in json.loads(capsys.readouterr().out)["placements"]}
    done, cells = judged[DONE], rows["etl-nightly"]
    assert (cells["phase"], cells["runningSince"]) == ("Completed", done["runningSince"])
    assert (cells["actual"], cells["oracle"]) == (done["actual"], done["oracle"])
    assert cells["oracleZone"] == done["oracleZone"]
    assert rows["deleted-vm"]["expected_g"] is None

    # every path: the Pulumi path's booking reported its phase only, and the report says why it is not judged
    code = main(["report", "--record", "--path", "all", "--scheduler-url", record.sched.url, "--traces", str(traces)])
    text = capsys.readouterr().out
    assert code == 0 and f"  etl-stack: in hindsight, {hindsight.NO_RUNNING_SINCE}" in text
    assert (
        main(
            [
                "report",
                "--record",
                "--path",
                "all",
                "--scheduler-url",
                record.sched.url,
                "--traces",
                str(traces),
                "-o",
                "yaml",
            ]
        )
        == 0
    )
    assert {r["workload"]: r for r in yaml.safe_load(capsys.readouterr().out)["placements"]}["etl-stack"][
        "phase"
    ] == "Completed"
    # --tenant: that tenant's rows only
    main(
        ["report", "--record", "--tenant", "someone-else", "--scheduler-url", record.sched.url, "--traces", str(traces)]
    )
    assert "etl-nightly" not in capsys.readouterr().out


def test_the_report_flags_say_what_they_need(capsys):
    assert main(["report", "--record", "--policy-zones", "--scheduler-url", "http://127.0.0.1:9"]) == 2
    assert "--record reads policy's zones" in capsys.readouterr().err
    assert main(["report", "--stack", "dev", "--path", "cluster"]) == 2
    assert "--path: only with --record" in capsys.readouterr().err
    assert main(["report"]) == 2
    assert "give --stack S" in capsys.readouterr().err


def test_the_dashboard_shows_the_recorded_lifecycle(record):
    headers = {"Authorization": f"Bearer {record.reader}"}
    api = httpx.get(f"{record.sched.url}/dashboard/api/placements", headers=headers, timeout=15).json()
    rows = {r["key"]: r for r in api["placements"]}
    done = rows[DONE]
    since = record.lifecycles[DONE].running_since
    assert since is not None
    assert (done["phase"], done["runningSince"]) == ("Completed", stamp(since))
    assert done["completedAt"] == stamp(since + RUN + timedelta(minutes=4))
    assert rows[MISSED]["expected_g"] is None and rows[DELETED]["expected_g"] is None
    assert api["totals"]["counted"] == 2  # the completed cluster run and the Pulumi path's

    page = httpx.get(f"{record.sched.url}/dashboard", headers=headers, timeout=15)
    assert page.status_code == 200
    row = re.search(rf'<tr data-key="{re.escape(DONE)}">(.*?)</tr>', page.text, re.S)
    assert row is not None
    assert f'<td class="running-since">{stamp(since)}</td>' in row.group(1)
    assert stamp(since + RUN + timedelta(minutes=4)) in row.group(1)
    assert "<b>quota exceeded</b>" not in page.text and "&lt;b&gt;quota exceeded&lt;/b&gt;" in page.text


def test_explain_shows_the_lifecycle(record):
    lc = record.lifecycles[DONE]
    assert lc.running_since is not None and lc.gate_opened_at is not None and lc.completed_at is not None
    with RetryingClient(record.sched.url, token=record.reader) as scheduler:
        text = explain.text(explain.account(explain.find(scheduler, f"{NAMESPACE}/etl-nightly", "dev")))
    lifecycle = text[text.index("lifecycle: ") :]
    assert lifecycle.startswith(f"lifecycle: Completed ({lc.reason})")
    assert (
        f"gate opened {stamp(lc.gate_opened_at)}, running since {stamp(lc.running_since)}, "
        f"completed {stamp(lc.completed_at)}"
    ) in lifecycle
    assert "last events (4 of 4):" in lifecycle and re.search(r"Running\s+running: ready since", lifecycle)
    # the dashboard's explain page is the same account
    page = httpx.get(
        f"{record.sched.url}/dashboard/explain/{DONE}", headers={"Authorization": f"Bearer {record.reader}"}, timeout=15
    )
    assert f"running since {stamp(lc.running_since)}" in page.text
