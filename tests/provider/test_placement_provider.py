"""The Placement provider class, driven directly against a real OPA (the project's policies) and the
real scheduler, both on loopback. (Under Pulumi mocks a dynamic provider never runs.)"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.local.controlplane import free_port
from greenops.local.delivery import delivered
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.provider.placement import PlacementProvider
from tests.support import loopback
from tests.support.cloud_init import moved
from tests.support.common import AZURE_SUBSCRIPTION
from tests.support.common import SSH_KEY as KEY
from tests.support.engine import iso

pytestmark = pytest.mark.integration


TENANTS = ("data", "web")  # the tenants these tests' workloads name


@contextlib.contextmanager
def placement_servers(
    scheduler: dict | None = None, opa: dict | None = None
) -> Iterator[tuple[OpaServer, SchedulerServer]]:
    """The real scheduler and OPA (tests.support.loopback), and the stack's credential (``stack_token``: the
    Pulumi path, for the tenants its workloads name, as greenops:schedulerToken hands it to Placement)."""
    with loopback.servers(scheduler, opa) as (sched, policy):
        sched.stack_token = sched.issue("dev-stack", TENANTS, paths=["pulumi"])
        yield policy, sched


@pytest.fixture(scope="module")
def servers():
    with placement_servers() as both:
        yield both


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch):
    """Placement falls back to GREENOPS_SCHEDULER_TOKEN (or the file GREENOPS_SCHEDULER_TOKEN_FILE
    names) and GREENOPS_OPA_TOKEN: none here unless a test sets them, so each credential a test sees
    is one it gave."""
    monkeypatch.delenv("GREENOPS_SCHEDULER_TOKEN", raising=False)
    monkeypatch.delenv("GREENOPS_SCHEDULER_TOKEN_FILE", raising=False)
    monkeypatch.delenv("GREENOPS_OPA_TOKEN", raising=False)


def placements_logged(scheduler) -> int:
    return scheduler.log.read_text().count('"scheduling.placed"')


def props(servers, **workload):
    opa, scheduler = servers
    w = {
        "name": "etl",
        "cpu": 4,
        "memory": 8,
        "duration": "2h",
        "deadline": stamp(datetime.now(UTC) + timedelta(days=2)),
        "originRegion": "westeurope",
        "dataResidency": "eu",
        "tenant": "data",
    }
    w.update(workload)
    return {
        "workload": w,
        "opaUrl": opa.url,
        "opaToken": opa.query_token,
        "schedulerUrl": scheduler.url,
        "schedulerToken": scheduler.stack_token,
        "timeoutSeconds": 5,
        "attempts": 2,
        "render": {"sshPublicKey": KEY, "skipAwait": True, "azureSubscriptionId": AZURE_SUBSCRIPTION},
    }


def refused(p: dict, match: str) -> None:
    """Placement refuses to create ``p``, with an error that ``match`` (a regular expression) finds."""
    with pytest.raises(GreenOpsError, match=match):
        PlacementProvider().create(p)


class Clock:
    def __init__(self):
        self.now = datetime.now(UTC)

    def __call__(self):
        return self.now


def test_check_names_the_workload_and_field(servers):
    p = props(servers, cpu=0, duration="6 hours")
    p["schedulerUrl"] = "localhost:8080"
    failures = {f.property: f.reason for f in PlacementProvider().check({}, p).failures}
    assert failures["workload.cpu"] == "workload 'etl': Input should be greater than 0"
    assert failures["workload.duration"].startswith("workload 'etl': \"6 hours\" is not a duration: whole hours")
    assert failures["schedulerUrl"] == "workload 'etl': schedulerUrl must be an http(s) URL"


def test_check_refuses_a_new_workload_past_its_deadline_but_not_a_placed_one(servers):
    p = props(servers, deadline="2025-01-01T00:00:00Z")
    new = PlacementProvider().check({}, p).failures
    assert new and "cannot finish in time" in new[0].reason
    assert PlacementProvider().check(p, p).failures == []


def test_create_places_and_gates_on_time(servers, catalog, crd_schemas):
    clock = Clock()
    provider = PlacementProvider(clock)
    created = provider.create(props(servers))
    out = created.outs
    d = out["decision"]
    assert created.id == "greenvm-etl"
    assert (
        catalog.region(d["provider"], d["region"]).eu and d["zone"] == catalog.region(d["provider"], d["region"]).zone
    )
    assert d["image"] == catalog.image(d["provider"], d["region"])
    start = datetime.fromisoformat(d["schedulingTime"].replace("Z", "+00:00"))

    # Before the start: Scheduled, nothing provider-specific.
    clock.now = start - timedelta(minutes=1)
    gated = provider.update(created.id, out, props(servers) | {"workload": out["workload"]}).outs
    assert gated["phase"] == "Scheduled" and gated["manifests"] == []

    # The gate opens (no lead here): diff reports an update, update renders the manifests.
    calls = placements_logged(servers[1])
    clock.now = start
    diff = provider.diff(created.id, gated, props(servers) | {"workload": out["workload"]})
    assert diff.changes and not diff.replaces
    running = provider.update(created.id, gated, props(servers) | {"workload": out["workload"]}).outs
    assert running["phase"] == "Running" and running["decision"] == d
    assert running["lifecycle"]["runningSince"] == running["lifecycle"]["gateOpenedAt"] == d["schedulingTime"]
    kinds = [m["kind"] for m in running["manifests"]]
    assert len(kinds) >= 3 and all(
        m["metadata"]["labels"]["greenops.io/workload"] == "etl" for m in running["manifests"]
    )
    assert [e for m in running["manifests"] for e in crd_schemas.errors(m)] == []

    # Unchanged and still running: no change, and no scheduler call anywhere in diff/update.
    assert not provider.diff(created.id, running, props(servers) | {"workload": out["workload"]}).changes

    # Completed: retire after the full duration from the actual start.
    clock.now = start + timedelta(hours=2)
    assert provider.diff(created.id, running, props(servers) | {"workload": out["workload"]}).changes
    done = provider.update(created.id, running, props(servers) | {"workload": out["workload"]}).outs
    assert done["phase"] == "Completed" and done["manifests"] == []
    assert done["lifecycle"]["completedAt"] == iso(start + timedelta(hours=2))
    assert placements_logged(servers[1]) == calls

    # A clock that steps back (NTP) does not reopen it.
    clock.now = start + timedelta(minutes=30)
    assert not provider.diff(created.id, done, props(servers) | {"workload": out["workload"]}).changes
    assert (
        provider.update(created.id, done, props(servers) | {"workload": out["workload"]}).outs["phase"] == "Completed"
    )


def test_a_missed_window_is_re_placed_from_now_and_then_runs_its_full_duration(servers):
    clock = Clock()
    provider = PlacementProvider(clock)
    # far deadline and a wide choice: the scheduler will usually wait for a cleaner hour
    p = props(servers, deadline=iso(clock.now + timedelta(days=3)), dataResidency="none")
    created = provider.create(p).outs
    p = p | {"workload": created["workload"]}
    start = datetime.fromisoformat(created["decision"]["schedulingTime"].replace("Z", "+00:00"))
    calls = placements_logged(servers[1])

    # No pass ran between the gate and well after the start: the next one finds it missed.
    clock.now = start + timedelta(hours=1)
    diff = provider.diff("greenvm-etl", created, p)
    assert diff.changes and diff.stables == []
    again = provider.update("greenvm-etl", created, p).outs
    assert placements_logged(servers[1]) == calls + 1  # a new scheduler call
    lc = again["lifecycle"]
    assert lc["replacements"] == 1
    replaced = [e for e in lc["events"] if e["reason"].startswith("re-placed: missed its window")]
    assert len(replaced) == 1 and f"no reconcile ran until {iso(clock.now)}" in replaced[0]["reason"]
    new_start = datetime.fromisoformat(again["decision"]["schedulingTime"].replace("Z", "+00:00"))
    assert new_start >= clock.now
    if again["phase"] == "Scheduled":  # the new window is later: run a pass at its start
        clock.now = new_start
        again = provider.update("greenvm-etl", again, p).outs
    assert again["phase"] == "Running" and again["manifests"]
    since = datetime.fromisoformat(again["lifecycle"]["runningSince"].replace("Z", "+00:00"))
    clock.now = since + timedelta(hours=2) - timedelta(seconds=1)
    assert provider.update("greenvm-etl", again, p).outs["phase"] == "Running"  # full length, from the actual start
    clock.now = since + timedelta(hours=2)
    assert provider.update("greenvm-etl", again, p).outs["phase"] == "Completed"


def test_a_missed_window_past_the_deadline_fails_with_the_reason_and_calls_nothing(servers):
    clock = Clock()
    provider = PlacementProvider(clock)
    p = props(servers, deadline=iso(clock.now + timedelta(hours=6)))
    created = provider.create(p).outs
    p = p | {"workload": created["workload"]}
    calls = placements_logged(servers[1])
    clock.now = clock.now + timedelta(hours=5)
    out = provider.update("greenvm-etl", created, p).outs
    assert out["phase"] == "Failed" and out["manifests"] == []
    assert "missed its window" in out["lifecycle"]["reason"] and "leaves no room for 2h" in out["lifecycle"]["reason"]
    assert placements_logged(servers[1]) == calls


def test_spec_change_replaces(servers):
    # A frozen clock: with the wall clock a start due within the second would move the phase
    # between create and diff, which is a change, just not the one this test is about.
    provider = PlacementProvider(Clock())
    out = provider.create(props(servers)).outs
    changed = props(servers) | {"workload": dict(out["workload"], cpu=8)}
    diff = provider.diff("greenvm-etl", out, changed)
    assert diff.changes and diff.replaces == ["workload"]
    same = props(servers) | {"workload": out["workload"]}
    assert provider.diff("greenvm-etl", out, same).changes is False


def test_policy_conflict_fails_closed(servers):
    with pytest.raises(GreenOpsError) as info:
        PlacementProvider().create(props(servers, originRegion="westus", maxLatency=10))
    assert "workload 'etl' was not placed: policy refused it" in str(info.value)
    assert "maxLatency 10 ms from westus leaves 0" in str(info.value)


@pytest.mark.parametrize(("setting", "named"), [("opaUrl", "OPA"), ("schedulerUrl", "scheduler")])
def test_a_dependency_down_is_a_clear_error(servers, setting, named):
    p = props(servers)
    p[setting] = f"http://127.0.0.1:{free_port()}"
    refused(p, rf"workload 'etl' was not placed: {named} at http://127\.0\.0\.1:\d+ did not answer")


def test_an_unreachable_cluster_is_a_named_error_and_the_record_is_kept(servers):
    clock = Clock()
    provider = PlacementProvider(clock)
    port = free_port()
    kubeconfig = (
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: k, cluster: {server: "
        f"'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    p = props(servers, deadline=iso(clock.now + timedelta(hours=2, minutes=1))) | {
        "watchOperators": True,
        "kubeconfig": kubeconfig,
        "leadSeconds": 300,
    }
    created = provider.create(p).outs
    assert created["phase"] == "Provisioning" and created["manifests"]  # must start now: the gate opened
    p = p | {"workload": created["workload"]}
    clock.now += timedelta(minutes=3)
    with pytest.raises(GreenOpsError, match=r"^workload 'etl': cannot read its objects back from the cluster: "):
        provider.diff("greenvm-etl", created, p)
    with pytest.raises(GreenOpsError, match=r"^workload 'etl': cannot read its objects back"):
        provider.update("greenvm-etl", created, p)


def test_the_scheduler_token_comes_from_the_stacks_secret_else_the_environment(servers, monkeypatch):
    opa, scheduler = servers
    p = props(servers)
    p.pop("schedulerToken")
    refused(
        p,
        r"workload 'etl' was not placed: scheduler refused the request "
        r"\(HTTP 401\): unauthenticated: a bearer token is required",
    )
    # another tenant's token does not book for this one: refused by name
    other = scheduler.issue("web-stack", ["web"], paths=["pulumi"])
    refused(
        p | {"schedulerToken": other},
        r"scheduler refused the request \(HTTP 403\): tenant: principal web-stack .* tenant data",
    )
    placed = PlacementProvider().create(p | {"schedulerToken": scheduler.stack_token}).outs
    assert placed["decision"]["zone"] and placed["phase"] in ("Scheduled", "Running")
    # without the stack's secret, the ambient credential (a CI step's secret, greenops serve's export)
    monkeypatch.setenv("GREENOPS_SCHEDULER_TOKEN", scheduler.stack_token)
    again = PlacementProvider().create(props(servers, name="etl-2") | {"schedulerToken": None}).outs
    assert again["decision"]["zone"]
    # and the stack's secret, when set, wins over it
    monkeypatch.setenv("GREENOPS_SCHEDULER_TOKEN", other)
    assert PlacementProvider().create(props(servers, name="etl-3")).outs["decision"]["zone"]


def test_the_opa_token_comes_from_the_stacks_secret_else_the_environment(servers, monkeypatch):
    opa, _ = servers
    p = props(servers)
    p.pop("opaToken")
    refused(
        p,
        rf"^workload 'etl' was not placed: OPA at {opa.url} requires a "
        r"bearer token and none was sent \(HTTP 401: ",
    )
    refused(
        p | {"opaToken": "stale"},
        rf"^workload 'etl' was not placed: OPA at {opa.url} refused the "
        r"bearer token \(HTTP 401: .*\); set greenops:opaToken",
    )
    placed = PlacementProvider().create(p | {"opaToken": opa.query_token}).outs
    assert placed["decision"]["zone"] and placed["phase"] in ("Scheduled", "Running")
    monkeypatch.setenv("GREENOPS_OPA_TOKEN", opa.query_token)
    assert PlacementProvider().create(props(servers, name="etl-2") | {"opaToken": None}).outs["decision"]["zone"]


def test_a_gate_the_program_declared_no_objects_for_is_held_one_pass_and_live_objects_are_never_dropped(servers):
    """greenops.placing.declared: told that this pass declares no objects, the Placement does not
    open a due gate (its next change stays the gate, due at once) and renders nothing; told so while
    its own record says its objects exist, it refuses the pass and changes nothing."""
    clock = Clock()
    provider = PlacementProvider(clock)
    created = provider.create(props(servers))
    out = created.outs
    start = datetime.fromisoformat(out["decision"]["schedulingTime"].replace("Z", "+00:00"))
    news = props(servers) | {"workload": out["workload"]}
    clock.now = start - timedelta(minutes=1)
    scheduled = provider.update(created.id, out, news | {"objectsDeclared": False}).outs
    assert scheduled["phase"] == "Scheduled"

    clock.now = start  # the gate (no lead here) is due, but no objects were declared
    assert not provider.diff(created.id, scheduled, news | {"objectsDeclared": False}).changes
    held = provider.update(created.id, scheduled, news | {"objectsDeclared": False}).outs
    assert held["phase"] == "Scheduled" and held["manifests"] == []
    assert held["nextChangeAt"] == out["decision"]["schedulingTime"]  # due: the next pass opens it
    assert held["lifecycle"] == scheduled["lifecycle"]

    # the next pass declares them: the gate opens, recorded at that pass
    clock.now = start + timedelta(seconds=40)
    running = provider.update(created.id, held, news | {"objectsDeclared": True}).outs
    assert running["phase"] == "Running" and running["manifests"]
    assert running["lifecycle"]["gateOpenedAt"] == stamp(clock.now)

    # a pass that would drop the objects of a running placement is refused, naming it
    for call in (provider.diff, provider.update):
        with pytest.raises(GreenOpsError, match=r"workload 'etl' is Running: its objects exist, but this pass did not"):
            call(created.id, running, news | {"objectsDeclared": False})


@pytest.mark.parametrize("status", [0, 5])
def test_a_run_reports_its_end_and_its_token_lives_only_in_the_state(servers, tmp_path, status):
    """With a completion URL, the pass that opens the gate gets the reservation's completion token
    and renders the report into the VM's user-data; the run's report (made here as the VM makes it)
    ends the run at its own time: Completed for 0, Failed otherwise."""
    clock = Clock()
    provider = PlacementProvider(clock)
    run = {"script": f"#!/bin/sh\nexit {status}\n"}
    given = props(servers, name=f"reporting-{status}", run=run, eligibleProviders=["azure"])
    given |= {"completionUrl": servers[1].url}
    created = provider.create(given)
    out = created.outs
    assert "report" not in out or out["report"] is None  # Scheduled: no token yet
    start = datetime.fromisoformat(out["decision"]["schedulingTime"].replace("Z", "+00:00"))
    clock.now = start
    running = provider.update(created.id, out, given | {"workload": out["workload"]}).outs
    assert running["phase"] == "Running"
    report = running["report"]
    assert "gor_" in report and f"{servers[1].url}/reservations/" in report
    vm = next(m for m in running["manifests"] if m["kind"] in ("VirtualMachine", "ComputeInstance", "Instance"))
    assert delivered(vm) is not None and "/var/lib/greenops/report.sh" in delivered(vm).user_data
    # the next pass keeps the same report: the objects do not change, no new token
    again = provider.update(created.id, running, given | {"workload": out["workload"]}).outs
    assert again["report"] == report and again["manifests"] == running["manifests"]
    assert not provider.diff(created.id, again, given | {"workload": out["workload"]}).changes

    # the VM's report, as its cloud-init would post it
    (tmp_path / "exit-status").write_text(f"{status}\n")
    (tmp_path / "report.sh").write_text(moved(report, tmp_path))
    assert subprocess.run(["sh", str(tmp_path / "report.sh")], timeout=60).returncode == 0
    clock.now = start + timedelta(minutes=20)
    assert provider.diff(created.id, again, given | {"workload": out["workload"]}).changes
    done = provider.update(created.id, again, given | {"workload": out["workload"]}).outs
    assert done["phase"] == ("Completed" if status == 0 else "Failed") and done["manifests"] == []
    ended = done["lifecycle"]["completedAt" if status == 0 else "failedAt"]
    key = done["reservation"]["key"]
    row = httpx.get(
        f"{servers[1].url}/reservations/{key}", headers={"Authorization": f"Bearer {servers[1].stack_token}"}
    )
    # the run's own time as the scheduler received it (never before the run began: this test's clock
    # opened the gate at the decided start, which the scheduler may have rounded up past its own now)
    assert ended == max(row.json()["completion"]["reportedAt"], done["lifecycle"]["runningSince"])
    assert ("reported exit status 0" if status == 0 else f"exited with status {status}") in done["lifecycle"]["reason"]
