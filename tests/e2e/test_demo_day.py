"""`greenops demo --once` as a user runs it: the dev stack and tonight's two jobs placed at a
simulated evening, then a simulated day played forward. What it prints about gates and
retirements is checked against the reservation record it leaves behind."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import stamp
from greenops.common.toolpaths import REPO
from greenops.local.demo import next_evening
from tests.support.common import require_tool
from tests.support.engine import at, require_engine

pytestmark = [pytest.mark.tools, pytest.mark.e2e]
PASS = re.compile(r"^   \[(\S+Z)\]$")
CHANGE = re.compile(r"^      (gate|started|retired)\s+(\S+): (.*)$")
CREATED = re.compile(r"^      \+ (\w+)/(\S+) created in the API server$")


def simulated_day(out: str) -> list[tuple[datetime, list[tuple[str, str, str]], list[str]]]:
    """Each pass of the played day: its instant, its (verb, workload, reason) lines, the objects created."""
    section = out.split("Playing the clock forward", 1)[1].split(" passes over ", 1)[0]
    passes = []
    for line in section.splitlines():
        if m := PASS.match(line):
            passes.append((at(m.group(1)), [], []))
        elif m := CHANGE.match(line):
            passes[-1][1].append(m.groups())
        elif m := CREATED.match(line):
            passes[-1][2].append(m.group(2))
    return passes


def cluster_days(out: str) -> list[tuple[datetime, list[tuple[str, str, str]]]]:
    """The steps of the cluster path's played days: each instant and its (verb, VmTemplate, reason) lines."""
    section = out.split("5) The cluster path over its days", 1)[1].split(" steps of the controller's clock", 1)[0]
    steps: list[tuple[datetime, list[tuple[str, str, str]]]] = []
    for line in section.splitlines():
        if m := PASS.match(line):
            steps.append((at(m.group(1)), []))
        elif m := re.match(r"^      (scheduled|started|retired|failed)\s+(\S+): (.*)$", line):
            steps[-1][1].append(m.groups())
    return steps


def test_the_demo_plays_a_simulated_day(tmp_path):
    require_engine()
    for tool in ("etcd", "kube-apiserver"):
        require_tool(tool)
    record = tmp_path / "reservations.db"
    t0 = next_evening(datetime.now(UTC))
    run = subprocess.run(
        [sys.executable, "-m", "greenops.cli", "demo", "--once", "--record", str(record), "--start", stamp(t0)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out

    waiting = re.search(r"(\d+) wait for a cleaner hour: (.*)", out)
    assert waiting and int(waiting.group(1)) >= 2, out
    waiters = set(re.findall(r"(\S+) until \S+ in \S+", waiting.group(2)))
    assert {"grid-settlement", "overnight-render"} <= waiters, out

    with sqlite3.connect(record) as db:
        rows = {
            key.split("/")[1]: (phase, reason, start)
            for key, phase, reason, start in db.execute(
                "SELECT key, phase, reason, start_at FROM reservations WHERE path = 'pulumi'"
            )
        }
    days = simulated_day(out)
    assert days and all(t0 < when <= t0 + timedelta(hours=24, seconds=5) for when, _, _ in days), out
    gates = {name: when for when, changes, _ in days for verb, name, _ in changes if verb == "gate"}
    retired = {name: (when, reason) for when, changes, _ in days for verb, name, reason in changes if verb == "retired"}
    created = {name: when for when, _, names in days for name in names}

    # every waiting workload's gate opened in the played day, shortly before its recorded start, and
    # its VM object appeared in the API server in that very pass (AWS: its security group)
    for name in waiters:
        start = datetime.fromisoformat(rows[name][2]).replace(tzinfo=UTC)
        assert name in gates, out
        assert start - timedelta(minutes=10) <= gates[name] <= start, (name, gates[name], start)
        assert any(n.startswith(name) for n, w in created.items() if w == gates[name]), out

    # every workload of the stack retired within the day, and the record says exactly what was printed
    assert set(retired) == set(rows), out
    for name, (when, reason) in retired.items():
        phase, recorded, _ = rows[name]
        assert phase == "Completed" and recorded == reason, (name, phase, recorded, reason)
        assert reason.endswith(f"retired at {stamp(when)}"), (name, reason, when)

    # the cluster path: at least one admitted VmTemplate waits for a later hour
    assert re.search(r"admitted \S+\s+-> \S+ size \S+ at \S+ \(waits for a cleaner hour\)", out), out

    # the cluster path over its days: a VmTemplate that waited starts at its gate and retires after
    # its duration, as the controller recorded in the reservation record
    cluster_waiters = set(re.findall(r"admitted (\S+)\s+-> \S+ size \S+ at \S+ \(waits for a cleaner hour\)", out))
    days = cluster_days(out)
    started = {name: when for when, changes in days for verb, name, _ in changes if verb == "started"}
    done = {name: when for when, changes in days for verb, name, _ in changes if verb == "retired"}
    with sqlite3.connect(record) as db:
        lives = {
            key.split("/")[1]: (phase, json.loads(lc) if lc else None, start)
            for key, phase, lc, start in db.execute(
                "SELECT key, phase, lifecycle, start_at FROM reservations WHERE path = 'cluster'"
            )
        }
    for name in cluster_waiters:
        phase, lc, start = lives[name]
        begins = datetime.fromisoformat(start).replace(tzinfo=UTC)
        assert begins - timedelta(minutes=6) <= started[name] <= begins, (name, started[name], begins)
        assert done[name] >= started[name] + timedelta(hours=2), (name, done)
        assert phase == "Completed" and lc["runningSince"] == stamp(started[name]), (name, phase, lc)
        assert [e["phase"] for e in lc["events"]][-2:] == ["Running", "Completed"], lc

    # explain, both paths: the constraint chain and the winning window, as the record holds them
    section = out.split("4) Why they run where and when", 1)[1].split("\n", 1)[1].split("Tearing down", 1)[0]
    pulumi, cluster = section.split("\n\n")[:2]
    with sqlite3.connect(record) as db:
        answers = dict(db.execute("SELECT key, answer FROM reservations"))
    for block, path in ((pulumi, "pulumi"), (cluster, "cluster")):
        key = block.split()[0]
        assert f"({path} path" in block, block
        assert "dataResidency" in block and "maxLatency" in block and "-> " in block, block
        answer = json.loads(answers[key])
        chosen = [line.split() for line in block.splitlines() if line.endswith("<- chosen")]
        assert chosen and chosen[0][:3] == [
            answer["scheduling_location"],
            answer["scheduling_time"],
            f"{answer['expected_intensity']:g}",
        ], block
        assert f"why: {answer['scheduling_location']}" in block and "mapping: zone" in block, block

    # delivery: grid-settlement's run reached its VM object as cloud-init user-data, valid by
    # cloud-init's schema, and its script, run from that object, printed its result
    delivered = out.split("+ VirtualMachine/grid-settlement created in the API server", 1)[1].splitlines()[1:4]
    assert delivered[0].strip() == (
        "its run, as cloud-init user-data in spec.osProfile.customData: "
        + (
            "valid (cloud-init schema)"
            if shutil.which("cloud-init")
            else "not checked: cloud-init is not installed (make cloud-init)"
        )
    ), delivered
    assert "it exited 0 and printed:" in delivered[1], delivered
    assert delivered[2].strip().startswith("grid-settlement: settled the day-ahead positions on "), delivered

    # in hindsight, against the simulated grid: every completed run has its actual and oracle
    hindsight = out.split("Playing the clock forward", 1)[1].split("in hindsight (gCO2/kWh):", 1)[1]
    header, *lines = hindsight.split("\ncarbon (", 1)[0].strip().splitlines()
    assert header.split() == ["workload", "runningSince", "actual", "oracle", "oracleZone", "oracleStart"], header
    assert len(lines) == len(rows) and all(len(line.split()) == 6 for line in lines), lines
    assert "completed, oracle:" in out and "(history: profiles)" in out, out

    # kubectl get vmplacements: every VmTemplate of the cluster path, with its phase and place (the
    # start as the record's API shows it: rounded up to the second)
    table = out.split("kubectl get vmplacements -n demo", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert table[0].split() == ["NAME", "PHASE", "POSITION", "PROVIDER", "REGION", "START", "EXPECTED", "AGE"], table
    shown = {line.split()[0]: line.split()[1:6] for line in table[1:]}  # POSITION is empty once placed
    assert set(shown) == set(lives), (shown, lives)
    for name, (phase, _, start) in lives.items():
        begins = datetime.fromisoformat(start).replace(tzinfo=UTC)
        whole = begins.replace(microsecond=0) + (timedelta(seconds=1) if begins.microsecond else timedelta(0))
        assert (shown[name][0], shown[name][3]) == (phase, stamp(whole)), (name, shown)
