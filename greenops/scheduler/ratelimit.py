"""Per-tenant rate limits, so one tenant's flood cannot crowd out the others' decisions.

A moving window per tenant, kept in each replica's memory (``limits``): with N replicas behind a
Service a tenant gets up to N times the limit, which still bounds a runaway client.
"""

from __future__ import annotations

import math
import time

from limits import parse, storage, strategies
from starlette.responses import JSONResponse


class TenantRateLimit:
    def __init__(self, spec: str):
        self.spec = spec  # e.g. "600/minute"
        self._limit = parse(spec)
        self._limiter = strategies.MovingWindowRateLimiter(storage.MemoryStorage())

    def refuse(self, tenant: str) -> JSONResponse | None:
        """None when ``tenant`` may go on; otherwise the 429 to answer, saying when to retry."""
        if self._limiter.hit(self._limit, tenant):
            return None
        stats = self._limiter.get_window_stats(self._limit, tenant)
        wait = max(1, math.ceil(stats.reset_time - time.time()))
        return JSONResponse(
            status_code=429,
            headers={"Retry-After": str(wait)},
            content={
                "detail": f"tenant: tenant {tenant} sent more than {self.spec} scheduling requests; retry in {wait} s"
            },
        )
