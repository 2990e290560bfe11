"""`greenops serve` as a developer runs it: OPA and the scheduler until SIGTERM or Ctrl-C, which
stop both. (Its servers are child processes, so the signal meets its main thread.)"""

from __future__ import annotations

import signal
import time

import httpx
import pytest

from greenops.common.toolpaths import REPO
from greenops.local.controlplane import free_port
from tests.support.common import require_tool
from tests.support.processes import CommandLines

pytestmark = [pytest.mark.tools, pytest.mark.integration]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_both_servers_on_a_signal(sig):
    require_tool("opa")
    opa_port, scheduler_port = free_port(), free_port()
    argv = [
        str(REPO / ".venv" / "bin" / "greenops"),
        *("serve", "--opa-port", str(opa_port), "--scheduler-port", str(scheduler_port)),
    ]
    with CommandLines(argv) as serve:  # on a failure, its servers go with it
        first = serve.until(lambda _: True)
        assert first.startswith("scheduler http://"), serve.text
        assert httpx.get(f"http://127.0.0.1:{opa_port}/health", timeout=5).status_code == 200
        serve.proc.send_signal(sig)
        sent = time.monotonic()
        code = serve.finish(timeout=60)
        stopped_in = time.monotonic() - sent
    assert code == 0, serve.text
    assert stopped_in < 15, f"{stopped_in:.1f} s"
    for port in (opa_port, scheduler_port):  # both servers went with it
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
