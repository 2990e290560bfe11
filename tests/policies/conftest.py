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
    """The decisions' OPA (the Data API; it serves no admission review)."""
    from greenops.local.opa import OpaServer

    with OpaServer(scheduler_url=scheduler.url) as server:
        yield server


@pytest.fixture(scope="module")
def webhook(opa_binary, scheduler):
    """The webhook's OPA: admission reviews (POST /) with the API server's token, nothing else."""
    from greenops.local.opa import OpaServer
    from greenops.local.webhook import namespace_manifest, put_namespaces

    with OpaServer(scheduler_url=scheduler.url, serves="webhook") as server:
        # the reviews' namespace, as kube-mgmt replicates it: tenant t1
        put_namespaces(server.url, {"greenops": namespace_manifest("greenops", "t1")}, token=server.admin_token)
        yield server
