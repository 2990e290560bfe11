"""``GET /metrics`` (Prometheus's text format) and the middleware that times every request.

The metrics name every tenant (bookings by tenant), so the route needs a credential, like every
route but the health probes: the read role, for every tenant. A token scoped to some tenants is
refused (403) rather than shown the others' counts. Prometheus presents its own read token
(``greenops token issue --role read``) as a bearer credential.
"""

from __future__ import annotations

import time

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from greenops.identity import Forbidden
from greenops.scheduler.auth import Reader
from greenops.scheduler.state import ClockDep, StateDep

# A method label is one of these, whatever a client sends; a path that matched no route is UNMATCHED.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"

router = APIRouter()


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text exposition"},
        403: {"description": "the credential reads only some tenants"},
    },
)
def metrics(state: StateDep, clock: ClockDep, principal: Reader) -> Response:
    """Every instrument, and the record as it is now on the scheduler's clock. Sync: the record's
    gauges are read from the database, in FastAPI's thread pool rather than on the event loop."""
    if principal.tenants is not None:
        raise Forbidden(
            f"{principal.describe()} may not read /metrics: it counts every tenant's bookings, so it needs a "
            "read credential for every tenant"
        )
    return Response(state.metrics.exposition(clock()), media_type=CONTENT_TYPE_LATEST)


def outcome(status: int) -> str:
    return "ok" if status < 400 else "client_error" if status < 500 else "server_error"


class RequestTimer:
    """Pure ASGI (no per-request task or body copy, unlike BaseHTTPMiddleware): the time to the end of
    each response, by the route template the router matched (never the path: keys are in paths)."""

    def __init__(self, app: ASGIApp, histogram: Histogram):
        self.app = app
        self.histogram = histogram

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers when the app raises before starting a response

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path_format", None) or UNMATCHED
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.histogram.labels(route, method, outcome(status)).observe(time.perf_counter() - started)
