"""``/credentials``: the API tokens, issued and revoked by an admin (``greenops token``).

POST   /credentials        {name, role, tenants, paths, expires_at?}  -> 201 with the token, shown once
GET    /credentials        every token's principal, created/revoked times; never a token or digest
DELETE /credentials/{id}   revoked from the next request on (on another replica: within a second)

Each within the caller's scopes: an admin token issued for some tenants and paths issues, lists and
revokes only tokens of those tenants and paths, and of no higher role.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from fastapi.responses import JSONResponse

from greenops.identity.tokens import TokenRequest, TokenStore, UnknownToken
from greenops.reservations.text import KEY_PATTERN
from greenops.scheduler.auth import Admin
from greenops.scheduler.state import ClockDep, StateDep


async def get_tokens(state: StateDep) -> TokenStore:
    # the authenticator's own: a revocation drops the token it keeps as verified (greenops.identity.verified)
    return state.auth.tokens


TokensDep = Annotated[TokenStore, Depends(get_tokens)]

# A token's id in the path: the key's rule within the id's column (32), so a NUL byte (a 500 on
# PostgreSQL) or a 10 kB id is a 422 naming it before any database sees it.
TokenId = Annotated[str, Path(min_length=1, max_length=32, pattern=KEY_PATTERN)]

router = APIRouter(prefix="/credentials", tags=["credentials"])


@router.post("", status_code=201)
def issue(req: TokenRequest, tokens: TokensDep, clock: ClockDep, admin: Admin) -> dict[str, Any]:
    issued = tokens.issue(req, clock(), admin)
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
def listing(tokens: TokensDep, admin: Admin) -> dict[str, Any]:
    return {"credentials": tokens.list(admin)}


@router.delete("/{token_id}", responses={404: {"description": "no such token"}})
def revoke(token_id: TokenId, tokens: TokensDep, clock: ClockDep, admin: Admin) -> Any:
    try:
        return tokens.revoke(token_id, clock(), admin)
    except UnknownToken as exc:
        return JSONResponse(status_code=404, content={"detail": str(exc)})
