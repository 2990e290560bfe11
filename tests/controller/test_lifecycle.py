"""A cluster-path workload's whole life in the record, from the API server, on real servers.

The test plays the parts that cannot run here: Krateo (it stores the VM object its Helm release
would, marked with the release, once the controller has asked for a render at the gate) and ASO
(it writes the VirtualMachine's Ready condition). The controller's clock is a file the test plays
forward (GREENOPS_CLOCK_FILE), so a one-hour run is lived in seconds; the scheduler, OPA and the
API server run on their own clocks."""

from __future__ import annotations

import base64
import math
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from greenops.charts.vmplacement import GROUP as PLACEMENT_GROUP
from greenops.charts.vmplacement import PLURAL as PLACEMENT_PLURAL
from greenops.charts.vmplacement import VERSION as PLACEMENT_VERSION
from greenops.common.clock import parse_time, set_clock_file, stamp
from greenops.controller.kube import api_client
from greenops.controller.placement_status import PlacementStatus
from greenops.insight import record_rows
from greenops.local.controller import ControllerProcess
from greenops.local.webhook import GROUP, VERSION
from greenops.renderers.user_data import REPORT_KEY, REPORT_SECRET_SUFFIX
from greenops.validation.crd import default_crd_dir
from tests.support.cloud_init import moved
from tests.support.cluster_path import controller_process, template
from tests.support.krateo import ASO_VM, KrateoStandIn
from tests.support.krateo import aso_vm_of as vm_of
from tests.support.upstream_crds import local_crd

pytestmark = [pytest.mark.integration, pytest.mark.tools, pytest.mark.crds]

VM = ASO_VM
LEAD = timedelta(seconds=300)
RESYNC = 0.3  # the controller's --resync-seconds here (LEAD above is the chart's default provisioningLeadSeconds)
KRATEO_RESYNC = 120.0  # far longer than any test here: only a new generation renders in time


@pytest.fixture(scope="module")
def vm_kind(cluster):
    """ASO's real VirtualMachine CRD, served without its operator (see tests.support.upstream_crds)."""
    path = default_crd_dir() / "compute.azure.com_virtualmachines.yaml"
    if not path.is_file():
        pytest.skip(f"upstream CRD {path} is absent")
    cluster.cp.create_crd(local_crd(yaml.safe_load(path.read_text())))
    return VM


@pytest.fixture
def clock(tmp_path):
    """The controller's clock starts two hours behind the scheduler's, which may place a run at
    once: every gate is then still ahead of it."""
    path = tmp_path / "now"
    set_clock_file(path, datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2))
    return path


def controller(cluster, clock, tmp_path, name: str, **kw) -> ControllerProcess:
    return controller_process(cluster, tmp_path, name, resync_seconds=RESYNC, clock_file=clock, **kw)


def admitted(cluster, ns: str, name: str, **spec) -> tuple[str, dict]:
    with cluster.cp.client() as k:
        r = k.post(cluster.path(ns), json=template(name, ns, eligibleProviders=["azure"], **spec))
        assert r.status_code == 201, r.text
        return r.json()["metadata"]["annotations"]["greenops.io/reservation"], r.json()


def render_note(cluster, ns: str, name: str) -> str | None:
    """What the controller last asked Krateo for: ``spec.render`` (a spec field, so a new generation)."""
    with cluster.cp.client() as k:
        return k.get(cluster.path(ns, name)).json()["spec"].get("render")


def act_as_krateo(cluster, obj: dict) -> str:
    """Store the VirtualMachine the chart renders, when the test says Krateo has rendered."""
    ns, vm = obj["metadata"]["namespace"], vm_of(obj)
    with cluster.cp.client() as k:
        r = k.post(f"/apis/{VM[0]}/{VM[1]}/namespaces/{ns}/{VM[2]}", json=vm)
        assert r.status_code == 201, r.text
    return vm["metadata"]["name"]


def act_as_aso(cluster, ns: str, name: str, condition: dict) -> None:
    with cluster.cp.client() as k:
        r = k.patch(
            f"/apis/{VM[0]}/{VM[1]}/namespaces/{ns}/{VM[2]}/{name}/status",
            json={"status": {"conditions": [{"type": "Ready", **condition}]}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 200, r.text


def events_of(cluster, ns: str, name: str) -> list[dict]:
    """The Events about VmTemplate ``ns/name``, oldest first, as ``kubectl describe`` finds them."""
    with cluster.cp.client() as k:
        found = k.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": f"involvedObject.name={name}"})
        assert found.status_code == 200, found.text
    events = [e for e in found.json()["items"] if e["involvedObject"]["kind"] == "VmTemplate"]
    return sorted(
        events,
        key=lambda e: (e["lastTimestamp"], e["metadata"]["creationTimestamp"], int(e["metadata"]["resourceVersion"])),
    )


def placements_table(cluster, ns: str) -> dict[str, dict[str, object]]:
    """``kubectl get vmplacements -n ns`` as the API server prints it (its Table form): each row's
    cells by column name, by object name; without ``-o wide``, so only the columns of priority 0."""
    with cluster.cp.client() as k:
        r = k.get(
            f"/apis/{PLACEMENT_GROUP}/{PLACEMENT_VERSION}/namespaces/{ns}/{PLACEMENT_PLURAL}",
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        )
        assert r.status_code == 200, r.text
    table = r.json()
    columns = table["columnDefinitions"]
    return {
        row["cells"][0]: {c["name"]: cell for c, cell in zip(columns, row["cells"], strict=True) if not c["priority"]}
        for row in table["rows"]
    }


def placement_path(ns: str, name: str) -> str:
    return f"/apis/{PLACEMENT_GROUP}/{PLACEMENT_VERSION}/namespaces/{ns}/{PLACEMENT_PLURAL}/{name}"


def placement_shows(cluster, ns: str, name: str, phase: str, timeout: float = 30) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        row = placements_table(cluster, ns).get(name)
        if row and row["Phase"] == phase:
            return row
        assert time.monotonic() < deadline, f"VmPlacement {ns}/{name} never showed {phase}: {row}"
        time.sleep(0.1)


def phase_is(phase: str):
    return lambda row: row["phase"] == phase and (row.get("lifecycle") or {}).get("phase") == phase


def test_scheduled_provisioning_running_completed_with_every_time_recorded(cluster, vm_kind, clock, tmp_path):
    with controller(cluster, clock, tmp_path, "life") as c:
        c.wait_leading()
        key, obj = admitted(cluster, "team-a", "whole-life")
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        assert row["phase"] == "Scheduled" and row["lifecycle"]["phase"] == "Scheduled"
        start = parse_time(row["start"])
        assert stamp(start) == obj["spec"]["schedulingTime"]
        gate = start - LEAD
        # kubectl get vmplacements: the phase and the place, from the record, on an object of its own
        shown = placement_shows(cluster, "team-a", "whole-life", "Scheduled")
        assert list(shown) == ["Name", "Phase", "Position", "Provider", "Region", "Start", "Expected", "Age"]
        assert (shown["Provider"], shown["Region"], shown["Start"]) == (
            "azure",
            obj["spec"]["schedulingLocation"],
            obj["spec"]["schedulingTime"],
        )
        assert shown["Expected"] == row["answer"]["expected_intensity"] > 0
        with cluster.cp.client() as k:
            placed = k.get(placement_path("team-a", "whole-life")).json()
        [owner] = placed["metadata"]["ownerReferences"]  # deleted with its VmTemplate
        assert (owner["kind"], owner["uid"]) == ("VmTemplate", obj["metadata"]["uid"])
        assert placed["status"]["reason"].startswith("placed at admission")

        set_clock_file(clock, gate - timedelta(minutes=1))  # before the gate: nothing moves
        c.wait_passes(3)
        assert cluster.reservation(key)["phase"] == "Scheduled"
        assert render_note(cluster, "team-a", "whole-life") is None

        opened = gate + timedelta(seconds=7)
        set_clock_file(clock, opened)
        row = cluster.wait(key, phase_is("Provisioning"))
        assert render_note(cluster, "team-a", "whole-life") == f"gate {stamp(opened)}"  # Krateo asked to render
        # asked, not yet seen: the gate opens when the rendered objects are
        assert row["lifecycle"]["gateOpenedAt"] is None and row["lifecycle"]["reason"].startswith("gate due")

        vm = act_as_krateo(cluster, cluster_object(cluster, "team-a", "whole-life"))
        row = cluster.wait(key, lambda r: (r["lifecycle"] or {}).get("gateOpenedAt") == stamp(opened))
        act_as_aso(
            cluster,
            "team-a",
            vm,
            {"status": "False", "reason": "Reconciling", "message": "creating", "lastTransitionTime": stamp(opened)},
        )
        set_clock_file(clock, opened + timedelta(seconds=60))
        row = cluster.wait(key, lambda r: "creating" in (r["lifecycle"] or {}).get("reason", ""))
        assert row["phase"] == "Provisioning"

        ready_at = opened + timedelta(seconds=90)
        # the clock first, then the condition: a pass never sees a Ready time ahead of its own clock
        set_clock_file(clock, opened + timedelta(seconds=150))
        c.wait_passes(2)
        act_as_aso(
            cluster, "team-a", vm, {"status": "True", "reason": "Succeeded", "lastTransitionTime": stamp(ready_at)}
        )
        row = cluster.wait(key, phase_is("Running"))
        assert row["lifecycle"]["runningSince"] == stamp(ready_at)  # the operator's time, not the pass's
        placement_shows(cluster, "team-a", "whole-life", "Running")

        end = ready_at + timedelta(hours=1)
        set_clock_file(clock, end - timedelta(seconds=1))
        c.wait_passes(3)
        assert cluster.reservation(key)["phase"] == "Running"
        set_clock_file(clock, end + timedelta(seconds=2))
        row = cluster.wait(key, phase_is("Completed"))
        lc = row["lifecycle"]
        assert lc["completedAt"] == stamp(end + timedelta(seconds=2))
        assert [e["phase"] for e in lc["events"]] == ["Scheduled", "Provisioning", "Running", "Completed"]
        assert render_note(cluster, "team-a", "whole-life") == f"end {stamp(end + timedelta(seconds=2))}"
        placement_shows(cluster, "team-a", "whole-life", "Completed")
        with cluster.cp.client() as k:
            status = k.get(placement_path("team-a", "whole-life")).json()["status"]
        assert (status["gateOpenedAt"], status["runningSince"], status["endedAt"]) == (
            stamp(opened),
            stamp(ready_at),
            lc["completedAt"],
        )
        assert status["reason"] == lc["reason"] and status["reservation"] == key
        # the zone-hours are given back, and a replayed pass writes nothing more
        revision = row["revision"]
        c.wait_passes(3)
        assert cluster.reservation(key)["revision"] == revision
        assert c.actions().count(f"Completed {key}: {lc['reason']}") == 1
        # each phase it entered is an Event on the VmTemplate, as kubectl describe lists them, the
        # first saying what it waits for
        told = events_of(cluster, "team-a", "whole-life")
        assert told[0]["message"].endswith(
            f"; waits for its gate at {stamp(gate)} (schedulingTime - provisioningLeadSeconds)"
        )
        assert [e["reason"] for e in told] == [
            "Scheduled",
            "Provisioning",
            "Rendered",
            "Running",
            "Completed",
        ]
        # the report's and the dashboard's row of it: the actual start, ready for hindsight
        reported = record_rows.placement_row(cluster.reservation(key))
        assert (reported["phase"], reported["runningSince"], reported["gateOpenedAt"]) == (
            "Completed",
            stamp(ready_at),
            stamp(opened),
        )


def act_as_aso_powered_off(cluster, ns: str, name: str) -> None:
    """What ASO reports once the VM has shut itself down: its instance view's power state."""
    statuses = [{"code": "ProvisioningState/succeeded"}, {"code": "PowerState/stopped", "displayStatus": "VM stopped"}]
    with cluster.cp.client() as k:
        r = k.patch(
            f"/apis/{VM[0]}/{VM[1]}/namespaces/{ns}/{VM[2]}/{name}/status",
            json={"status": {"instanceView": {"statuses": statuses}}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 200, r.text


def test_a_run_that_powers_its_vm_off_completes_before_its_duration(cluster, vm_kind, clock, tmp_path):
    with controller(cluster, clock, tmp_path, "ends") as c:
        c.wait_leading()
        key, _ = admitted(cluster, "team-a", "short-job", run={"script": "#!/bin/sh\necho done > /var/tmp/result\n"})
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        opened = parse_time(row["start"]) - LEAD + timedelta(seconds=1)
        set_clock_file(clock, opened)
        cluster.wait(key, phase_is("Provisioning"))
        vm = act_as_krateo(cluster, cluster_object(cluster, "team-a", "short-job"))
        act_as_aso(
            cluster, "team-a", vm, {"status": "True", "reason": "Succeeded", "lastTransitionTime": stamp(opened)}
        )
        row = cluster.wait(key, phase_is("Running"))

        seen = opened + timedelta(minutes=12)  # a fifth of its hour
        set_clock_file(clock, seen)
        c.wait_passes(2)
        assert cluster.reservation(key)["phase"] == "Running"  # still on: the duration is only the bound
        act_as_aso_powered_off(cluster, "team-a", vm)
        row = cluster.wait(key, phase_is("Completed"))
        lc = row["lifecycle"]
        assert lc["completedAt"] == stamp(seen) and lc["runningSince"] == stamp(opened)
        assert "powered itself off" in lc["reason"]


def run_as_the_vm(cluster, ns: str, name: str, status: int, scratch) -> None:
    """What the VM's cloud-init does when its script ends, here: the report script the controller
    left in the VmTemplate's Secret (which the chart renders into the user-data), run with its paths
    moved into ``scratch``, posting ``status`` to the real scheduler."""
    with cluster.cp.client() as k:
        secret = k.get(f"/api/v1/namespaces/{ns}/secrets/{name}{REPORT_SECRET_SUFFIX}")
        assert secret.status_code == 200, secret.text
    body = secret.json()
    assert body["immutable"] is True and body["metadata"]["ownerReferences"][0]["kind"] == "VmTemplate"
    script = base64.b64decode(body["data"][REPORT_KEY]).decode()
    (scratch / "exit-status").write_text(f"{status}\n")
    (scratch / "report.sh").write_text(moved(script, scratch))
    assert subprocess.run(["sh", str(scratch / "report.sh")], timeout=60).returncode == 0


@pytest.mark.parametrize("status", [0, 4])
def test_a_run_that_reports_its_end_is_recorded_at_that_time(cluster, vm_kind, clock, tmp_path, status):
    name = f"reports-{status}"
    with controller(cluster, clock, tmp_path, name, completion_url=cluster.sched.url) as c:
        c.wait_leading()
        key, _ = admitted(cluster, "team-a", name, run={"script": f"#!/bin/sh\nexit {status}\n"})
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        opened = parse_time(row["start"]) - LEAD + timedelta(seconds=1)
        set_clock_file(clock, opened)
        cluster.wait(key, phase_is("Provisioning"))  # the Secret is written before the render is asked for
        vm = act_as_krateo(cluster, cluster_object(cluster, "team-a", name))
        act_as_aso(
            cluster, "team-a", vm, {"status": "True", "reason": "Succeeded", "lastTransitionTime": stamp(opened)}
        )
        cluster.wait(key, phase_is("Running"))

        # the controller's clock runs two hours behind the scheduler's here: brought to just past the
        # scheduler's now first, so that no pass sees the report before its own clock has reached it
        passes_at = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=2)
        set_clock_file(clock, passes_at)
        c.wait_passes(2)
        assert cluster.reservation(key)["phase"] == "Running"  # the duration is only the bound
        run_as_the_vm(cluster, "team-a", name, status, tmp_path)
        reported = cluster.wait(key, lambda r: r.get("completion"))["completion"]
        assert reported["exitStatus"] == status
        at = parse_time(reported["reportedAt"])
        row = cluster.wait(key, phase_is("Completed" if status == 0 else "Failed"))
        lc = row["lifecycle"]
        assert (lc["completedAt"] if status == 0 else lc["failedAt"]) == stamp(at)  # the run's own time
        said = f"reported exit status 0 at {stamp(at)}" if status == 0 else f"exited with status {status}"
        assert said in lc["reason"]
        assert render_note(cluster, "team-a", name) == f"end {stamp(passes_at)}"
        assert "gor_" not in c.log.read_text()  # the token is never logged


def test_without_a_completion_url_no_report_is_prepared(cluster, vm_kind, clock, tmp_path):
    with controller(cluster, clock, tmp_path, "no-report") as c:
        c.wait_leading()
        key, _ = admitted(cluster, "team-a", "no-report", run={"script": "#!/bin/sh\ntrue\n"})
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        set_clock_file(clock, parse_time(row["start"]) - LEAD + timedelta(seconds=1))
        cluster.wait(key, phase_is("Provisioning"))
        with cluster.cp.client() as k:
            assert k.get(f"/api/v1/namespaces/team-a/secrets/no-report{REPORT_SECRET_SUFFIX}").status_code == 404


def test_kill_9_between_the_ask_and_the_render_loses_and_doubles_nothing(cluster, vm_kind, clock, tmp_path):
    """The leader asks Krateo to render at the gate and is killed before the render is seen. The next
    leader does not ask again. It opens the gate at the pass that sees the render, and tells each
    phase once."""
    first = controller(cluster, clock, tmp_path, "asks")
    with first:
        first.wait_leading()
        key, obj = admitted(cluster, "team-b", "cut-short")
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        asked_at = parse_time(row["start"]) - LEAD + timedelta(seconds=1)
        set_clock_file(clock, asked_at)
        row = cluster.wait(key, phase_is("Provisioning"))
        assert row["lifecycle"]["gateOpenedAt"] is None  # asked, not yet rendered
        # the pass ends with its Events (written after the record: a kill before them loses them,
        # best effort as every Event is; the record keeps the phase)
        deadline = time.monotonic() + 30
        while "Provisioning" not in [e["reason"] for e in events_of(cluster, "team-b", "cut-short")]:
            assert time.monotonic() < deadline, "the Provisioning Event was never written"
            time.sleep(0.1)
        first.kill()
    asked = render_note(cluster, "team-b", "cut-short")
    assert asked == f"gate {stamp(asked_at)}"
    vm = act_as_krateo(cluster, cluster_object(cluster, "team-b", "cut-short"))  # Krateo renders meanwhile
    seen_at = asked_at + timedelta(seconds=20)
    set_clock_file(clock, seen_at)
    with controller(cluster, clock, tmp_path, "takes-over") as second:
        second.wait_leading(timeout=60)  # once the killed leader's Lease has run out
        row = cluster.wait(key, lambda r: (r["lifecycle"] or {}).get("gateOpenedAt"))
        assert row["lifecycle"]["gateOpenedAt"] == stamp(seen_at)  # the pass that saw the render
        act_as_aso(
            cluster, "team-b", vm, {"status": "True", "reason": "Succeeded", "lastTransitionTime": stamp(seen_at)}
        )
        row = cluster.wait(key, phase_is("Running"))
        second.wait_passes(3)
        assert render_note(cluster, "team-b", "cut-short") == asked  # never asked twice
        phases = [e["phase"] for e in row["lifecycle"]["events"]]
        assert phases == ["Scheduled", "Provisioning", "Running"], phases
        told = [e["reason"] for e in events_of(cluster, "team-b", "cut-short")]
        assert told == ["Scheduled", "Provisioning", "Rendered", "Running"], told


def test_an_operators_terminal_error_gives_failed(cluster, vm_kind, clock, tmp_path):
    with controller(cluster, clock, tmp_path, "fail") as c:
        c.wait_leading()
        key, _ = admitted(cluster, "team-b", "quota-hit")
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        opened = parse_time(row["start"]) - LEAD + timedelta(seconds=1)
        set_clock_file(clock, opened)
        cluster.wait(key, phase_is("Provisioning"))
        vm = act_as_krateo(cluster, cluster_object(cluster, "team-b", "quota-hit"))
        act_as_aso(
            cluster,
            "team-b",
            vm,
            {
                "status": "False",
                "severity": "Error",
                "reason": "QuotaExceeded",
                "message": "cores quota reached",
                "lastTransitionTime": stamp(opened),
            },
        )
        row = cluster.wait(key, phase_is("Failed"))
        assert "terminal error" in row["reason"] and "cores quota reached" in row["reason"]
        assert row["lifecycle"]["failedAt"] == stamp(opened)
        assert render_note(cluster, "team-b", "quota-hit") == f"end {stamp(opened)}"
        # kubectl get vmplacements -o wide: the failure and why, on the object
        shown = placement_shows(cluster, "team-b", "quota-hit", "Failed")
        assert shown["Provider"] == "azure"
        with cluster.cp.client() as k:
            status = k.get(placement_path("team-b", "quota-hit")).json()["status"]
        assert status["endedAt"] == stamp(opened) and "cores quota reached" in status["reason"]


def test_a_placement_someone_else_owns_is_replaced_not_written_over(cluster):
    """A VmPlacement of the name owned by another object (a former VmTemplate the garbage collector
    has not reached yet): the new VmTemplate's status never lands on it."""
    with cluster.cp.client() as k:
        other = k.post(
            "/api/v1/namespaces/team-a/configmaps", json={"metadata": {"name": "an-owner"}, "data": {}}
        ).json()
        leftover = {
            "apiVersion": f"{PLACEMENT_GROUP}/{PLACEMENT_VERSION}",
            "kind": "VmPlacement",
            "metadata": {
                "name": "taken",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "an-owner", "uid": other["metadata"]["uid"]}
                ],
            },
        }
        r = k.post(placement_path("team-a", "").rstrip("/"), json=leftover)
        assert r.status_code == 201, r.text
    # its owner is a real VmTemplate: the garbage collector deletes an object whose owner does not
    # exist, and did so once, under load, when this owner was a made-up uid
    _, template = admitted(cluster, "team-a", "taken")
    template_meta = template["metadata"]
    PlacementStatus(api_client(str(cluster.cp.kubeconfig_path))).show(template, {"phase": "Scheduled"})
    with cluster.cp.client() as k:
        placed = k.get(placement_path("team-a", "taken")).json()
    assert [o["uid"] for o in placed["metadata"]["ownerReferences"]] == [template_meta["uid"]]
    assert placed["status"] == {"phase": "Scheduled"}


def test_a_placement_goes_with_its_vmtemplate_and_a_new_one_of_the_name_gets_its_own(cluster, vm_kind, clock, tmp_path):
    with controller(cluster, clock, tmp_path, "again") as c:
        c.wait_leading()
        _, first = admitted(cluster, "team-a", "same-name")
        placement_shows(cluster, "team-a", "same-name", "Scheduled")
        with cluster.cp.client() as k:
            assert k.delete(cluster.path("team-a", "same-name")).status_code == 200
            # the garbage collector (the real kube-controller-manager) deletes what the VmTemplate owned
            deadline = time.monotonic() + 30
            while k.get(placement_path("team-a", "same-name")).status_code != 404:
                assert time.monotonic() < deadline, "the VmPlacement outlived its VmTemplate"
                time.sleep(0.1)
        _, second = admitted(cluster, "team-a", "same-name")
        placement_shows(cluster, "team-a", "same-name", "Scheduled")
        with cluster.cp.client() as k:
            placed = k.get(placement_path("team-a", "same-name")).json()
        assert [o["uid"] for o in placed["metadata"]["ownerReferences"]] == [second["metadata"]["uid"]]
        assert first["metadata"]["uid"] != second["metadata"]["uid"]
        assert "not written" not in c.log.read_text()


def test_a_missed_gate_with_no_room_left_fails_and_says_so(cluster, vm_kind, clock, tmp_path):
    """The controller was not running at the gate (nor at the start): the run cannot meet its deadline."""
    key, obj = admitted(cluster, "team-a", "missed")
    deadline = parse_time(obj["spec"]["deadline"])
    set_clock_file(clock, deadline - timedelta(minutes=30))  # a one-hour run no longer fits
    with controller(cluster, clock, tmp_path, "late") as c:
        c.wait_leading()
        row = cluster.wait(key, phase_is("Failed"))
        assert "missed its window" in row["reason"] and "leaves no room" in row["reason"]
        assert render_note(cluster, "team-a", "missed") is None  # nothing was rendered, nothing to retire


def krateo(cluster, clock, resync: float = KRATEO_RESYNC) -> KrateoStandIn:
    """Krateo with its real rules: a render on a new generation and at each resync, never on metadata."""
    return KrateoStandIn(
        cluster.cp.client, f"/apis/{GROUP}/{VERSION}/vmtemplates", f"/apis/{VM[0]}/{VM[1]}/namespaces/{{ns}}/{VM[2]}",
        vm_of, clock, resync,
    )  # fmt: skip


def test_the_krateo_stand_in_renders_on_a_new_generation_never_on_metadata(cluster, vm_kind, clock):
    """Its rules, shown once: an annotation (the earlier design's ask) leaves the generation as it is
    and renders nothing before the resync; a spec change renders at once."""
    set_clock_file(clock, datetime.now(UTC) + timedelta(days=1))  # past any gate: a render stores the VM
    with krateo(cluster, clock) as stand_in:
        key, obj = admitted(cluster, "team-a", "rules")
        name = f"team-a/{obj['metadata']['name']}"
        deadline = time.monotonic() + 10
        while not any(r[0] == name for r in stand_in.renders):
            assert time.monotonic() < deadline, "never rendered at first sight"
            time.sleep(0.1)
        seen = len(stand_in.renders)
        with cluster.cp.client() as k:
            patch = {"Content-Type": "application/merge-patch+json"}
            k.patch(cluster.path("team-a", "rules"), json={"metadata": {"annotations": {"a": "b"}}}, headers=patch)
            time.sleep(2)
            assert [r for r in stand_in.renders[seen:] if r[0] == name] == []  # an annotation: no render
            k.patch(
                cluster.path("team-a", "rules"), json={"spec": {"render": "gate 2030-01-01T00:00:00Z"}}, headers=patch
            )
            deadline = time.monotonic() + 5
            while not [r for r in stand_in.renders[seen:] if r[0] == name]:
                assert time.monotonic() < deadline, "a new generation was not rendered"
                time.sleep(0.1)
        assert stand_in.renders[-1][2].startswith("generation ")


def test_the_gate_opens_within_one_resync_of_its_time(cluster, vm_kind, clock, tmp_path):
    """The test ticks the controller's clock one second per second through the gate, as a real
    clock would, with Krateo's real render rules and a resync far longer than the test: the gate must
    be recorded open, at the render, at most one controller resync after it is due."""
    with controller(cluster, clock, tmp_path, "tick") as c, krateo(cluster, clock) as stand_in:
        c.wait_leading()
        key, obj = admitted(cluster, "team-b", "on-time")
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        gate = parse_time(row["start"]) - LEAD
        ticking = Ticker(clock, gate - timedelta(seconds=3))
        with ticking:
            row = cluster.wait(key, lambda r: (r.get("lifecycle") or {}).get("gateOpenedAt"))
        opened = parse_time(row["lifecycle"]["gateOpenedAt"])
        # whole seconds are recorded: the ask's pass, the render, the pass that sees it, rounded up
        assert gate <= opened <= gate + timedelta(seconds=math.ceil(2 * RESYNC) + 2), (gate, opened, ticking.last)
        asked = render_note(cluster, "team-b", "on-time")
        assert asked is not None and gate <= parse_time(asked.removeprefix("gate ")) <= opened
        assert any(
            r[0] == f"team-b/{obj['metadata']['name']}" and r[2].startswith("generation ") for r in stand_in.renders
        )


def test_a_vm_that_came_up_late_is_retired_by_the_chart_and_recorded_so(cluster, vm_kind, clock, tmp_path):
    """Placed to start at once, the gate opens late; the VM comes up after its start; Krateo removes it
    at schedulingTime + duration (the chart's window), before runningSince + duration."""
    with controller(cluster, clock, tmp_path, "late-vm") as c:
        c.wait_leading()
        key, obj = admitted(cluster, "team-a", "came-up-late")
        row = cluster.wait(key, lambda r: r["held_until"] is None and r.get("lifecycle"))
        start = parse_time(row["start"])
        opened = start + timedelta(seconds=20)
        set_clock_file(clock, opened)
        row = cluster.wait(key, phase_is("Provisioning"))
        assert row["reason"].startswith("gate opened late (missed its window")
        vm = act_as_krateo(cluster, cluster_object(cluster, "team-a", "came-up-late"))
        cluster.wait(key, lambda r: (r["lifecycle"] or {}).get("gateOpenedAt") == stamp(opened))  # seen rendered
        ready = start + timedelta(minutes=10)
        set_clock_file(clock, ready + timedelta(seconds=5))
        c.wait_passes(2)
        act_as_aso(cluster, "team-a", vm, {"status": "True", "reason": "Succeeded", "lastTransitionTime": stamp(ready)})
        cluster.wait(key, phase_is("Running"))
        chart_end = start + timedelta(hours=1)
        set_clock_file(clock, chart_end + timedelta(seconds=30))
        c.wait_passes(3)
        assert cluster.reservation(key)["phase"] == "Running"  # the VM is still there: still running
        with cluster.cp.client() as k:  # Krateo's render after the chart's window: the VM is removed
            assert k.delete(f"/apis/{VM[0]}/{VM[1]}/namespaces/team-a/{VM[2]}/{vm}").status_code == 200
        row = cluster.wait(key, phase_is("Completed"))
        assert "retired by the chart at the end of its window" in row["reason"] and "having run 50m" in row["reason"]


class Ticker:
    """Moves a clock file forward one second per real second, from ``start``, in a thread."""

    def __init__(self, path, start: datetime):
        self.path, self.last = path, start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        began = time.monotonic()
        while not self._stop.is_set():
            now = self._start + timedelta(seconds=time.monotonic() - began)
            set_clock_file(self.path, now.replace(microsecond=0))
            self.last = now
            self._stop.wait(0.05)

    def __enter__(self) -> Ticker:
        self._start = self.last
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def cluster_object(cluster, ns: str, name: str) -> dict:
    with cluster.cp.client() as k:
        return k.get(cluster.path(ns, name)).json()
