"""Two runs on one machine, each with a node: kube-proxy's chains have fixed names in the host's
tables, so a node waits for the machine-wide lock before it makes anything, starts once the other
lets go, and, when it has waited too long, says why and leaves nothing behind."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from greenops.local import node as node_module
from greenops.local.controlplane import ControlPlaneError, LocalControlPlane
from greenops.local.node import PROXY_LOCK, LocalNode, missing
from tests.support.common import missing as unavailable

pytestmark = pytest.mark.integration

HOLD = (
    "import fcntl, os, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def other_run():
    """Another run's node, as far as the lock goes: a process holding it until killed."""
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    PROXY_LOCK.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(PROXY_LOCK)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    yield holder
    holder.kill()
    holder.wait()


def made_nothing(node: LocalNode) -> bool:
    return not (node.leftover_processes() or node.leftover_links() or node.leftover_mounts())


def test_a_node_waits_for_the_other_runs_lock_and_starts_once_it_is_let_go(other_run):
    with LocalControlPlane() as cp:
        node = LocalNode(cp)
        failed: list[BaseException] = []

        def start() -> None:
            try:
                node.start()
            except BaseException as exc:  # noqa: BLE001 - the main thread asserts on it
                failed.append(exc)

        starting = threading.Thread(target=start)
        starting.start()
        try:
            time.sleep(5)
            assert starting.is_alive() and not failed, failed
            assert made_nothing(node)  # no bridge, no containerd, nothing while it waits
            other_run.kill()
            other_run.wait()
            starting.join(timeout=240)
            assert not starting.is_alive() and not failed, failed
            assert node.leftover_rules(), "the node's kube-proxy wrote no rule"
        finally:
            starting.join(timeout=240)
            node.stop()
        assert made_nothing(node) and not node.leftover_rules()


def test_a_node_that_waits_too_long_says_why_and_leaves_nothing(other_run, monkeypatch):
    monkeypatch.setattr(node_module, "PROXY_LOCK_WAIT", 2.0)
    with LocalControlPlane() as cp:
        node = LocalNode(cp)
        began = time.monotonic()
        with pytest.raises(ControlPlaneError, match="another node on this machine has run kube-proxy for 2s"):
            node.start()
        assert time.monotonic() - began < 10
        assert made_nothing(node)
        node.stop()  # safe after a failed start
    assert other_run.poll() is None  # the other run's lock was never taken from it
