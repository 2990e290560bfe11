"""`greenops demo` as a user runs it, twice on one reservation record: stopped with Ctrl-C, then
run again with --once. The restarted demo starts from the reservations the first one left (the
dev stack's, under the same keys), books none of them twice, and leaves nothing behind."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from greenops.common.clock import stamp
from greenops.common.toolpaths import REPO
from greenops.local.demo import cluster_templates, next_evening
from tests.support.common import require_tool
from tests.support.engine import require_engine
from tests.support.signals import signal_another_thread

pytestmark = [pytest.mark.tools, pytest.mark.e2e]
ADMITTED = len(cluster_templates()) - 1  # every VmTemplate of the demo but "impossible"


def record_table(out: str) -> list[list[str]]:
    """The rows of section 3, the record's table: key, tenant, path, phase, ..."""
    section = out.split("3) The scheduler's record of placements", 1)[1]
    lines = section.splitlines()[2:]
    rows = []
    for line in lines:
        if re.match(r"^\d+ active placement\(s\)$", line):
            return rows
        rows.append(line.split())
    raise AssertionError(f"no end to the record's table in:\n{section}")


def left(out: str) -> int:
    return int(re.search(r"reservation record .*: (\d+) active left", out).group(1))


def test_a_restarted_demo_shows_the_same_reservations(tmp_path):
    require_engine()
    for tool in ("etcd", "kube-apiserver"):
        require_tool(tool)
    record = tmp_path / "reservations.db"
    # placing only (no simulated day, whose retirements would leave nothing active to restart
    # with), at one simulated instant for both runs
    start = stamp(next_evening(datetime.now(UTC)))
    demo = [sys.executable, "-m", "greenops.cli", "demo", "--record", str(record), "--hours", "0", "--start", start]
    first = subprocess.Popen(demo, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out1 = []
    deadline = time.monotonic() + 300
    for line in first.stdout:
        out1.append(line)
        if line.startswith("Everything stays up"):
            break
        assert time.monotonic() < deadline, "".join(out1)
    # Ctrl-C goes to the process, and the kernel may hand it to any of its threads (gRPC's among
    # them): given to one that is not the main thread, it must still stop the demo
    signal_another_thread(first.pid, signal.SIGINT)
    try:
        rest, _ = first.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        first.kill()
        rest, _ = first.communicate()
        pytest.fail("the demo did not stop within 120 s of Ctrl-C:\n" + "".join(out1) + rest)
    out1 = "".join(out1) + rest
    assert first.returncode == 0, out1
    rows1 = record_table(out1)
    pulumi1 = sorted(r[0] for r in rows1 if r[2] == "pulumi")
    assert len(pulumi1) == 8 and all(k.startswith("demo/") for k in pulumi1), out1
    assert len([r for r in rows1 if r[2] == "cluster"]) == ADMITTED, out1
    assert left(out1) == 8, out1  # the VmTemplates were deleted with their control plane: released

    second = subprocess.run([*demo, "--once"], cwd=REPO, capture_output=True, text=True, timeout=400)
    out2 = second.stdout + second.stderr
    assert second.returncode == 0, out2
    assert "reservation record" in out2 and ": 8 active from earlier runs" in out2, out2
    rows2 = record_table(out2)
    keys2 = [r[0] for r in rows2]
    assert len(keys2) == len(set(keys2)), out2  # nothing booked twice
    assert sorted(r[0] for r in rows2 if r[2] == "pulumi") == pulumi1, out2
    assert len([r for r in rows2 if r[2] == "cluster"]) == ADMITTED, out2
    assert left(out2) == 0, out2  # destroy and the VmTemplates' deletion released everything
