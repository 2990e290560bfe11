"""A run's report of its end (greenops.reservations.completion).

    POST /reservations/{key}/completion-token?replace=&tenant=   the reservation's owner (report role):
                                                          its token, once per decision (replace: a new one)
    POST /reservations/{key}/completion         {"exitStatus": 0..255}, with that token as its bearer

The token is the only credential the second endpoint takes, and the second endpoint the only one
that takes it. A token that is not the key's current one is refused the same way whether or not
the key exists (401), so the answer says nothing to someone guessing. The token also says whose
reservation of the key it reports for: another tenant may hold the same key.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from greenops.reservations import UnknownReservation, completion
from greenops.scheduler.api.keys import KeyTenant, ReservationKey
from greenops.scheduler.api.reservations import KEYED, ReservationOut, absent, out, resolved
from greenops.scheduler.auth import Reporter
from greenops.scheduler.state import ClockDep, StoreDep

router = APIRouter(prefix="/reservations", tags=["completion"])


class CompletionToken(BaseModel):
    token: str = Field(description="the bearer of POST /reservations/{key}/completion; shown once, never stored")
    key: str
    issued_at: datetime


class CompletionReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    exit_status: int = Field(alias="exitStatus", ge=0, le=255, description="the script's exit status")


@router.post("/{key:path}/completion-token", response_model=CompletionToken, status_code=201, responses=KEYED)
def issue_token(
    key: ReservationKey,
    store: StoreDep,
    clock: ClockDep,
    principal: Reporter,
    replace: bool = False,
    tenant: KeyTenant = None,
) -> CompletionToken | JSONResponse:
    row = resolved(store, principal, key, tenant)
    if row is None:
        return absent(key)
    principal.may_report(row)  # its tenant's and path's owner only
    now = clock()
    try:
        token = completion.issue(store, row["tenant"], key, now, replace)
        return CompletionToken(token=token, key=key, issued_at=now)
    except UnknownReservation as exc:  # released meanwhile
        return JSONResponse(status_code=404, content={"detail": str(exc)})
    except (completion.CompletionRefused, completion.CompletionConflict) as exc:
        return JSONResponse(status_code=409, content={"detail": str(exc)})


@router.post("/{key:path}/completion", response_model=ReservationOut)
def report_completion(
    key: ReservationKey,
    report: CompletionReport,
    store: StoreDep,
    clock: ClockDep,
    authorization: Annotated[str, Header()] = "",
) -> ReservationOut | JSONResponse:
    scheme, _, token = authorization.partition(" ")
    try:
        if scheme.lower() != "bearer" or not token:
            raise completion.CompletionRefused(f"reservation {key}: a completion report needs its bearer token")
        return out(completion.record(store, key, token.strip(), report.exit_status, clock()))
    except completion.CompletionRefused as exc:
        return JSONResponse(status_code=401, content={"detail": str(exc)}, headers={"WWW-Authenticate": "Bearer"})
    except completion.CompletionConflict as exc:
        return JSONResponse(status_code=409, content={"detail": str(exc)})
