"""What the scheduler service holds for its lifetime, and the FastAPI dependencies that hand it to
the routes.

``create_app`` sets one ``SchedulerState`` on ``app.state``; routes never reach for it themselves but
ask for the piece they use (``clock: ClockDep``), so a test can replace any one piece with
``app.dependency_overrides[get_clock] = ...`` and every route that reads the time follows. The
providers are ``async``: they only read attributes, and a sync dependency would cost each request a
hop through the thread pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from greenops.common.clock import Clock
from greenops.intensity.base import CarbonSource
from greenops.policies.settings import PolicySettings
from greenops.reservations import ReservationStore
from greenops.scheduler.auth import Authenticator
from greenops.scheduler.metrics import SchedulerMetrics
from greenops.scheduler.orphan_sweep import OrphanSweep
from greenops.scheduler.outlook import RecordedOutlook
from greenops.scheduler.queueing import Admitter, QueueSettings
from greenops.scheduler.ratelimit import PrincipalRateLimit
from greenops.search.offload import SearchPool


@dataclass(frozen=True)
class SchedulerState:
    source: CarbonSource
    store: ReservationStore
    clock: Clock
    capacity_vcpu: float  # per zone and hourly slot
    auth: Authenticator  # who is calling (greenops.scheduler.auth)
    policy: PolicySettings  # the tenants' quotas: the same settings the policy bundle ships
    rate_limit: PrincipalRateLimit | None
    searches: SearchPool
    metrics: SchedulerMetrics  # this app's instruments, on its own registry
    price: RecordedOutlook | None = None  # the scarcity price, when switched on
    orphan_sweep: OrphanSweep = field(default_factory=OrphanSweep)  # the grace and how often it runs
    queue: QueueSettings = field(default_factory=QueueSettings)  # its bound per tenant, how often it is tried
    admitter: Admitter = field(default_factory=Admitter)  # started with the app (its lifespan)


async def get_state(request: Request) -> SchedulerState:
    state: SchedulerState = request.app.state.scheduler
    return state


StateDep = Annotated[SchedulerState, Depends(get_state)]


async def get_source(state: StateDep) -> CarbonSource:
    return state.source


async def get_store(state: StateDep) -> ReservationStore:
    return state.store


async def get_clock(state: StateDep) -> Clock:
    return state.clock


SourceDep = Annotated[CarbonSource, Depends(get_source)]
StoreDep = Annotated[ReservationStore, Depends(get_store)]
ClockDep = Annotated[Clock, Depends(get_clock)]
