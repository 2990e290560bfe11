"""The hostile-tenant suite's servers: one real scheduler on loopback, its admin, and a token per
principal a test plays (each tenant's own, OPA's cluster-path one, a reader's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from greenops.local.scheduler import SchedulerServer
from tests.support.bookings import NOW
from tests.support.tenancy import Tenancy


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    log = tmp_path_factory.mktemp("hostile") / "scheduler.log"
    with SchedulerServer(log=log, env={"GREENOPS_NOW": NOW}) as sched:
        yield Tenancy.issued(sched)
