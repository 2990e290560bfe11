"""Per-principal rate limits, so one caller's flood cannot crowd out the others' decisions.

Keyed by the authenticated principal, never by anything the body says (a tenant named in the body
could be rotated to dodge the limit). A moving window per principal, kept in each replica's memory
(``limits``): with N replicas behind a Service a caller gets up to N times the limit, which still
bounds a runaway client.
"""

from __future__ import annotations

import math
import time

from limits import parse, storage, strategies
from starlette.responses import JSONResponse


class PrincipalRateLimit:
    def __init__(self, spec: str):
        self.spec = spec  # e.g. "600/minute"
        self._limit = parse(spec)
        self._limiter = strategies.MovingWindowRateLimiter(storage.MemoryStorage())

    def refuse(self, bucket: str, principal: str) -> JSONResponse | None:
        """None when the credential ``bucket`` may go on; otherwise the 429 to answer, naming the
        ``principal`` and when to retry."""
        if self._limiter.hit(self._limit, bucket):
            return None
        stats = self._limiter.get_window_stats(self._limit, bucket)
        wait = max(1, math.ceil(stats.reset_time - time.time()))
        return JSONResponse(
            status_code=429,
            headers={"Retry-After": str(wait)},
            content={
                "detail": f"rate limit: principal {principal} sent more than {self.spec} scheduling requests; "
                f"retry in {wait} s"
            },
        )
