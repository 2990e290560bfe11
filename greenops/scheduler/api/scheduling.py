"""``POST /scheduling`` and ``PUT /reservations/{key}``: decide where and when, and book it
(greenops.scheduler.decider makes the decision)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from greenops.scheduler.answer import field_error
from greenops.scheduler.api.keys import ReservationKey
from greenops.scheduler.auth import Writer
from greenops.scheduler.contract import PendingResponse, SchedulingRequest, SchedulingResponse
from greenops.scheduler.decider import Decider
from greenops.scheduler.state import ClockDep, SourceDep, StateDep, StoreDep

RESPONSES: dict[int | str, dict[str, Any]] = {
    202: {
        "model": PendingResponse,
        "description": "with queue: no window has room now, but one could before the deadline; the request "
        "waits in the queue as Pending, at the position given",
    },
    409: {
        "description": "no capacity before the deadline, or the tenant's quota is used up (with queue: not even "
        "once every other booking is gone, or the tenant's queue is full)"
    },
    422: {"description": "invalid request, naming the field"},
    503: {"description": "carbon source unavailable or req_timeout exceeded"},
    401: {"description": "no credential, or one the scheduler does not accept"},
    403: {
        "description": "the body names a tenant, path or quota the caller does not own, or the key is its "
        "tenant's reservation on a path the caller does not book on"
    },
    413: {"description": "the body is larger than the scheduler accepts"},
    429: {"description": "the caller sent more requests than its rate limit; Retry-After says when"},
}


async def get_decider(state: StateDep, source: SourceDep, store: StoreDep, clock: ClockDep) -> Decider:
    return Decider.of(state, source, store, clock)


DeciderDep = Annotated[Decider, Depends(get_decider)]

router = APIRouter()


@router.post("/scheduling", response_model=SchedulingResponse, responses=RESPONSES)
def post_scheduling(req: SchedulingRequest, decider: DeciderDep, principal: Writer) -> JSONResponse:
    """The thesis contract; with ``key`` it is idempotent, without one every call books anew."""
    return decider.schedule(req, req.key or f"api/{uuid.uuid4()}", principal)


@router.put("/reservations/{key:path}", response_model=SchedulingResponse, responses=RESPONSES)
def put_reservation(
    key: ReservationKey, req: SchedulingRequest, decider: DeciderDep, principal: Writer
) -> JSONResponse:
    """Book (or re-book with a changed request) the reservation ``key``."""
    if req.key is not None and req.key != key:
        return field_error("key", f"{req.key} differs from the key in the path, {key}")
    return decider.schedule(req, key, principal)
