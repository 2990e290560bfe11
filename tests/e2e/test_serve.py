"""`greenops serve` as a developer runs it: OPA and the scheduler until SIGTERM or Ctrl-C, which
stop both. (Its servers are child processes, so the signal meets its main thread.)"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import httpx
import pytest

from greenops.common.toolpaths import REPO
from greenops.local.controlplane import free_port
from tests.conftest import require_tool

pytestmark = [pytest.mark.tools, pytest.mark.integration]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_both_servers_on_a_signal(sig):
    require_tool("opa")
    opa_port, scheduler_port = free_port(), free_port()
    proc = subprocess.Popen(
        [
            str(REPO / ".venv" / "bin" / "greenops"),
            *("serve", "--opa-port", str(opa_port), "--scheduler-port", str(scheduler_port)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # on a failure, its servers go with it (below)
    )
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        assert first.startswith("scheduler http://"), first + proc.stdout.read(4000)  # type: ignore[union-attr]
        assert httpx.get(f"http://127.0.0.1:{opa_port}/health", timeout=5).status_code == 200
        proc.send_signal(sig)
        sent = time.monotonic()
        rest, _ = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, first + rest
    assert stopped_in < 15, f"{stopped_in:.1f} s"
    for port in (opa_port, scheduler_port):  # both servers went with it
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
