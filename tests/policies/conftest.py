from __future__ import annotations

import pytest

from greenops.local.scheduler_standin import SchedulerStandIn
from tests.support.common import require_tool


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
    from greenops.local.opa import OpaServer
    from greenops.local.webhook import namespace_manifest, put_namespaces

    with OpaServer(scheduler_url=scheduler.url) as server:
        # the reviews' namespace, as kube-mgmt replicates it: tenant t1
        put_namespaces(server.url, {"greenops": namespace_manifest("greenops", "t1")}, token=server.admin_token)
        yield server
