from __future__ import annotations

import pytest

from greenops.local.scheduler_standin import SchedulerStandIn

from greenops.local.tools import ToolMissing, tool_path


@pytest.fixture(scope="session")
def opa_binary():
    try:
        return tool_path("opa")
    except ToolMissing as exc:
        import os
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def scheduler():
    s = SchedulerStandIn()
    yield s
    s.close()


@pytest.fixture(scope="module")
def opa(opa_binary, scheduler):
    from greenops.policies.server import OpaServer

    with OpaServer(scheduler_url=scheduler.url) as server:
        yield server
