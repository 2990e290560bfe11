"""``/credentials``: the API tokens, issued and revoked by an admin (``greenops token``).

POST   /credentials        {name, role, tenants, paths, expires_at?}  -> 201 with the token, shown once
GET    /credentials        every token's principal, created/revoked times; never a token or digest
DELETE /credentials/{id}   revoked from the next request on
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from greenops.identity.tokens import TokenRequest, TokenStore, UnknownToken
from greenops.scheduler.auth import Admin
from greenops.scheduler.state import ClockDep, StoreDep

router = APIRouter(prefix="/credentials", tags=["credentials"])


@router.post("", status_code=201)
def issue(req: TokenRequest, store: StoreDep, clock: ClockDep, _admin: Admin) -> dict[str, Any]:
    issued = TokenStore(store).issue(req, clock())
    p = issued.principal
    return {
        "id": issued.id,
        "token": issued.token,
        "name": p.name,
        "role": p.role,
        "tenants": None if p.tenants is None else sorted(p.tenants),
        "paths": sorted(p.paths),
    }


@router.get("")
def listing(store: StoreDep, _admin: Admin) -> dict[str, Any]:
    return {"credentials": TokenStore(store).list()}


@router.delete("/{token_id}", responses={404: {"description": "no such token"}})
def revoke(token_id: str, store: StoreDep, clock: ClockDep, _admin: Admin) -> Any:
    try:
        return TokenStore(store).revoke(token_id, clock())
    except UnknownToken as exc:
        return JSONResponse(status_code=404, content={"detail": str(exc)})
