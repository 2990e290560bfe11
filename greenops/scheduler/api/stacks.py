"""``/stacks`` and ``/sweeps``: the Pulumi stacks' last passes, and the orphan sweep.

    PUT  /stacks/{stack}?tenant=           a Pulumi pass over the stack ran now (write role, pulumi path)
    POST /sweeps/orphans?grace_seconds=    release the Scheduled Pulumi-path bookings of stacks not
                                           seen for the grace (admin role; its tenants only)

The stack is marked for the caller's tenant: a tenant keeps only its own stacks alive, and cannot
make another tenant's orphans look seen. The service also sweeps on its own, every
``orphan_sweep_seconds`` (greenops.reservations.orphans).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from greenops.models.workload import DEFAULT_TENANT
from greenops.reservations import orphans
from greenops.reservations.text import KEY_PATTERN
from greenops.scheduler.api.keys import KeyTenant
from greenops.scheduler.auth import Admin, Writer
from greenops.scheduler.state import ClockDep, StoreDep

# The stack column's length; a key's characters (a stack is a key's first segments)
StackName = Annotated[str, Path(min_length=1, max_length=256, pattern=KEY_PATTERN)]
Grace = Annotated[float, Query(ge=60, le=90 * 86400, description="seconds a stack may go unseen")]

DEFAULT_GRACE_SECONDS = orphans.DEFAULT_GRACE.total_seconds()

router = APIRouter(tags=["stacks"])


@router.put("/stacks/{stack:path}")
def stack_seen(
    stack: StackName, store: StoreDep, clock: ClockDep, principal: Writer, tenant: KeyTenant = None
) -> dict[str, Any]:
    who = principal.tenant_for(tenant, DEFAULT_TENANT)
    principal.path_for("pulumi")  # only a principal that books on the Pulumi path keeps stacks alive
    now = clock()
    store.stack_seen(who, stack, now)
    return {"tenant": who, "stack": stack, "seen": now.isoformat()}


@router.post("/sweeps/orphans")
def sweep_orphans(
    store: StoreDep, clock: ClockDep, admin: Admin, grace_seconds: Grace = DEFAULT_GRACE_SECONDS
) -> dict[str, Any]:
    grace = timedelta(seconds=grace_seconds)
    done = orphans.sweep(store, clock(), grace, tenants=admin.tenants)
    return {
        "grace_seconds": grace_seconds,
        "released": [{"tenant": o.tenant, "key": o.key, "stack": o.stack, "reason": o.reason(grace)} for o in done],
    }
