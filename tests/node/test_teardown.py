"""Nothing of a node outlives it: once stopped, no process, mount, netns, bridge, cgroup, iptables
rule or folder of it is left on the machine; nor when the run that started it was killed, once the
next run starts. (Its own module: a node holds kube-proxy's machine-wide lock while it runs, so
these tests start theirs after every other suite's node has stopped.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import NETNS, LocalNode, missing, reap_stale
from tests.support.common import missing as unavailable
from tests.support.node_pods import RESTRICTED, wait_ready
from tests.support.node_pods import pause_pod as pod

pytestmark = pytest.mark.integration


def test_a_stopped_node_leaves_nothing_on_the_machine():
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    before_netns = set(os.listdir(NETNS)) if NETNS.exists() else set()
    with LocalControlPlane() as cp:
        node = LocalNode(cp)
        with node:
            with cp.client() as k:
                body = pod("busy", RESTRICTED)
                body["spec"]["nodeName"] = node.name
                assert k.post("/api/v1/namespaces/default/pods", json=body).status_code == 201
                wait_ready(k, "default", "busy")
            assert node.leftover_processes() and node.leftover_mounts() and node.leftover_links()
            assert node.leftover_rules(), "kube-proxy wrote no rule"
        assert node.leftover_processes() == []
        assert node.leftover_rules() == []
        assert node.leftover_mounts() == []
        assert node.leftover_links() == []
        assert node.leftover_cgroups() == []
        assert (set(os.listdir(NETNS)) if NETNS.exists() else set()) == before_netns
        assert not node.workdir.exists()


CHILD = """
import json, sys, time, httpx
from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import LocalNode
sys.path.insert(0, %(repo)r)
from tests.support.node_pods import RESTRICTED, wait_ready
from tests.support.node_pods import pause_pod as pod
cp = LocalControlPlane()
cp.start()
node = LocalNode(cp)
node.start()
with cp.client() as k:
    body = pod("busy", RESTRICTED)
    body["spec"]["nodeName"] = node.name
    k.post("/api/v1/namespaces/default/pods", json=body)
    wait_ready(k, "default", "busy")
print(json.dumps({"node": str(node.workdir), "cp": str(cp.workdir), "name": node.name}), flush=True)
time.sleep(600)
"""


def test_a_node_whose_run_was_killed_is_taken_down_by_the_next():
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    before_netns = set(os.listdir(NETNS)) if NETNS.exists() else set()
    repo = str(Path(__file__).resolve().parents[2])
    child = subprocess.Popen([sys.executable, "-c", CHILD % {"repo": repo}], stdout=subprocess.PIPE, cwd=repo)
    try:
        started = json.loads(child.stdout.readline())
    finally:
        child.kill()  # kill -9: no stop, no finally of its own
        child.wait()
    folder = Path(started["node"])
    stale = LocalNode.__new__(LocalNode)
    stale.name, stale.workdir = started["name"], folder
    stale.__post_init__()
    try:
        assert stale.leftover_processes() and stale.leftover_links(), "the killed run left its node running"
        assert stale.leftover_rules(), "the killed run's kube-proxy left no rule to reap"
        assert reap_stale(folder.parent) == [folder]
        assert stale.leftover_processes() == [] and stale.leftover_mounts() == []
        assert stale.leftover_rules() == []
        assert stale.leftover_links() == [] and stale.leftover_cgroups() == [] and not folder.exists()
        assert (set(os.listdir(NETNS)) if NETNS.exists() else set()) == before_netns
    finally:
        for pid in [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]:  # its control plane
            try:
                if started["cp"].encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
        shutil.rmtree(started["cp"], ignore_errors=True)
