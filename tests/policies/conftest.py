from __future__ import annotations

import pytest

from greenops.local.scheduler_standin import SchedulerStandIn

from tests.conftest import require_tool


@pytest.fixture(scope="session")
def opa_binary():
    return require_tool("opa")


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
