"""Bearer-token authentication for the scheduler's decision endpoints.

When a token is configured, ``POST /scheduling`` needs ``Authorization: Bearer <token>``: without
it any pod could fill the capacity calendar. The comparison is constant-time, so the token cannot
be guessed from response times. Health endpoints stay open for the kubelet's probes.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from greenops.scheduler.state import get_token

_bearer = HTTPBearer(auto_error=False)


async def require_token(
    token: Annotated[str | None, Depends(get_token)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """A FastAPI dependency: passes everyone when the app has no token, else only its bearer."""
    if token is None:
        return
    given = credentials.credentials if credentials else ""
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail="a bearer token is required: send Authorization: Bearer <scheduler token>",
            headers={"WWW-Authenticate": "Bearer"},
        )
