"""Who is calling: every route but the health probes needs a bearer credential the scheduler checks.

A credential proves a principal (greenops.identity): a declared static token (the bootstrap admin's,
OPA's; compared by digest, in constant time), an API token from the record (``gos_…``, looked up by
digest, and kept for a second once valid: greenops.identity.verified), or a Kubernetes
ServiceAccount token (TokenReview, its answers kept for a few seconds). The
routes then ask for the role they need; what a principal may touch is decided in
greenops.identity.Principal, never from the request body.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from greenops.identity import ALL_PATHS, Forbidden, Principal, Role
from greenops.identity.kubernetes import ReviewUnavailable, TokenReviewer
from greenops.identity.tokens import PREFIX, TokenStore, digest

ADMIN = Principal(name="admin", role="admin", tenants=None, paths=ALL_PATHS)
MAX_TOKEN = 8192  # a ServiceAccount JWT is ~1 KB; anything far longer is not a credential

_bearer = HTTPBearer(auto_error=False)


@dataclass(frozen=True)
class Authenticator:
    tokens: TokenStore
    static: Mapping[str, Principal]  # SHA-256 hex of a declared token (the admin's, OPA's) -> principal
    reviewer: TokenReviewer | None
    clock: Callable[[], datetime]

    def known(self, bearer: str) -> Principal | str | None:
        """What ``bearer`` proves when that takes no I/O: a declared token, an API token verified
        lately, a ServiceAccount token reviewed lately; else None (``principal`` reads or asks)."""
        if len(bearer) > MAX_TOKEN:
            return "the bearer token is too long"
        given = digest(bearer)
        # every digest compared, so the time taken says nothing about which one matched
        matched = [p for d, p in self.static.items() if hmac.compare_digest(given, d)]
        if matched:
            return matched[0]
        if bearer.startswith(PREFIX):
            return self.tokens.verified(bearer, self.clock())
        if self.reviewer is not None and bearer.count(".") == 2:
            return self.reviewer.cached(bearer)
        return "the bearer token is not known"

    def principal(self, bearer: str) -> Principal | str:
        """The principal ``bearer`` proves, or why it proves none: a read of the record, or a
        TokenReview, when ``known`` cannot tell."""
        if (found := self.known(bearer)) is not None:
            return found
        if bearer.startswith(PREFIX):
            return self.tokens.lookup(bearer, self.clock())
        assert self.reviewer is not None, "known() answers every other kind of bearer"
        return self.reviewer.review(bearer)


def _refuse(reason: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED,
        detail=f"unauthenticated: {reason}: send Authorization: Bearer <token> (greenops token issue)",
        headers={"WWW-Authenticate": "Bearer"},
    )


async def authenticated(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    """A FastAPI dependency: the caller's principal, or 401. What needs no I/O is answered on the
    event loop; a lookup that reads the database (or asks the API server) runs in the thread pool.
    (A sync dependency would cost every request that hop, where most need none.)"""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise _refuse("a bearer token is required")
    auth: Authenticator = request.app.state.scheduler.auth
    try:
        found = auth.known(credentials.credentials)
        if found is None:
            found = await run_in_threadpool(auth.principal, credentials.credentials)
    except ReviewUnavailable as exc:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, detail=str(exc), headers={"Retry-After": "5"}
        ) from None
    if isinstance(found, str):
        raise _refuse(found)
    request.state.principal = found
    return found


def requires(role: Role) -> Callable[[Principal], Awaitable[Principal]]:
    # async: it only compares roles, and a sync dependency would cost each request one more hop
    # through the thread pool
    async def check(principal: Annotated[Principal, Depends(authenticated)]) -> Principal:
        if not principal.has(role):
            raise Forbidden(f"{principal.describe()} may not do this: it needs the {role} role")
        return principal

    return check


Reader = Annotated[Principal, Depends(requires("read"))]
Reporter = Annotated[Principal, Depends(requires("report"))]
Writer = Annotated[Principal, Depends(requires("write"))]
Admin = Annotated[Principal, Depends(requires("admin"))]
