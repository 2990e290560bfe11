"""Who is calling: every route but the health probes needs a bearer credential the scheduler checks.

A credential proves a principal (greenops.identity): a declared static token (the bootstrap admin's,
OPA's; compared by digest, in constant time), an API token from the record (``gos_…``, looked up by
digest on every request so that a revocation holds from the next one), or a Kubernetes
ServiceAccount token (TokenReview). The
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

    def principal(self, bearer: str) -> Principal | str:
        """The principal ``bearer`` proves, or why it proves none."""
        if len(bearer) > MAX_TOKEN:
            return "the bearer token is too long"
        given = digest(bearer)
        # every digest compared, so the time taken says nothing about which one matched
        matched = [p for d, p in self.static.items() if hmac.compare_digest(given, d)]
        if matched:
            return matched[0]
        if bearer.startswith(PREFIX):
            return self.tokens.lookup(bearer, self.clock())
        if self.reviewer is not None and bearer.count(".") == 2:
            return self.reviewer.review(bearer)
        return "the bearer token is not known"


def _refuse(reason: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED,
        detail=f"unauthenticated: {reason}: send Authorization: Bearer <token> (greenops token issue)",
        headers={"WWW-Authenticate": "Bearer"},
    )


def authenticated(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    """A FastAPI dependency: the caller's principal, or 401. Sync: a token lookup reads the database,
    so FastAPI runs it in its thread pool rather than on the event loop."""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise _refuse("a bearer token is required")
    auth: Authenticator = request.app.state.scheduler.auth
    try:
        found = auth.principal(credentials.credentials)
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
    # through the thread pool (the lookup above needs its thread; this does not)
    async def check(principal: Annotated[Principal, Depends(authenticated)]) -> Principal:
        if not principal.has(role):
            raise Forbidden(f"{principal.describe()} may not do this: it needs the {role} role")
        return principal

    return check


Reader = Annotated[Principal, Depends(requires("read"))]
Reporter = Annotated[Principal, Depends(requires("report"))]
Writer = Annotated[Principal, Depends(requires("write"))]
Admin = Annotated[Principal, Depends(requires("admin"))]
