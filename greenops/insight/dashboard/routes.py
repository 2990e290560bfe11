"""The dashboard's routes: the page, its data as JSON, and plotly.js from the pinned package."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Response
from fastapi import Path as PathParameter
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse
from pydantic import BaseModel, field_validator

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.insight import explain
from greenops.insight.dashboard import views
from greenops.insight.dashboard.data import DashboardData
from greenops.reservations import AmbiguousKey
from greenops.reservations.text import KEY_MAX, KEY_PATTERN, Word

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from greenops.common.clock import Clock

TEMPLATES = Path(__file__).parent / "templates"

# A reservation key in the explain page's path: the record's rule (greenops.reservations.text), so a
# key no booking has (a NUL byte: a 500 on PostgreSQL) is a 422 naming it before any database sees it.
RecordKey = Annotated[str, PathParameter(min_length=1, max_length=KEY_MAX, pattern=KEY_PATTERN)]


class PageFilters(BaseModel):
    """The page's filters (views.FILTERS) as its form sends them: an empty one filters nothing, any
    other value is a ``Word`` of the record's, as every value of its column is (a NUL byte, or a
    10 kB value, is a 422 naming the parameter)."""

    tenant: Word | None = None
    provider: Word | None = None
    region: Word | None = None
    phase: Word | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _empty_is_all(cls, value: object) -> object:
        return None if value == "" else value


def chosen(filters: Annotated[PageFilters, Query()]) -> dict[str, str]:
    return filters.model_dump(exclude_none=True)


def _plotly_js() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _plain(figure: go.Figure) -> dict[str, Any]:
    """The figure as plain JSON data (plotly's encoder knows datetimes and numpy), for the template's
    ``tojson``, which escapes it for a script element: workload names are the users' text."""
    plain: dict[str, Any] = json.loads(figure.to_json())
    return plain


def dashboard_router(
    source: DashboardData | Callable[[Any], DashboardData],
    clock: Clock,
    reader: Callable[..., Any] | None = None,
) -> APIRouter:
    """Read-only routes under /dashboard. ``source`` is the data, or, with ``reader`` (a FastAPI
    dependency giving the caller's principal), a function of that principal: the scheduler shows each
    caller the tenants it may read."""
    from fastapi.templating import Jinja2Templates

    templates = Jinja2Templates(directory=str(TEMPLATES))
    router = APIRouter(prefix="/dashboard", tags=["dashboard"])

    if reader is None:
        fixed = source

        def data_for() -> DashboardData:
            return fixed  # type: ignore[return-value]  # a fixed source without a reader
    else:
        per_principal = source

        def data_for(principal: Any = Depends(reader)) -> DashboardData:  # type: ignore[misc]
            return per_principal(principal)  # type: ignore[operator]

    # A default, not an Annotated alias: annotations are strings here (PEP 563), and FastAPI would
    # not find a local alias by name.
    data_dep = Depends(data_for)

    filters_dep = Depends(chosen)

    def rows_for(filters: dict[str, str], data: DashboardData, now: datetime) -> list[dict[str, Any]]:
        return views.placement_rows(data.reservations(filters, now - views.HISTORY))

    @router.get("", response_class=HTMLResponse, summary="the dashboard page")
    def page(request: Request, data: DashboardData = data_dep, filters: dict[str, str] = filters_dep) -> HTMLResponse:
        now = clock()
        every = rows_for(filters, data, now)
        # what waits in the queue has no placement yet: its own table, in admission order
        queue = sorted((r for r in every if r["phase"] == "Pending"), key=lambda r: r.get("position") or 0)
        placed = [r for r in every if r["phase"] != "Pending"]
        rows = sorted(placed, key=lambda r: r["start"], reverse=True)[: views.MAX_ROWS]
        return templates.TemplateResponse(
            request,
            "dashboard.html",
            {
                "rows": rows,
                "queue": queue,
                "total_rows": len(placed),
                "totals": views.totals(every),
                "options": views.options(every),
                "chosen": {k: filters.get(k, "") for k in views.FILTERS},
                "history_days": views.HISTORY.days,
                "now": stamp(now),
                "timeline": _plain(views.timeline_figure(rows, now)) if rows else None,
                "intensity": _plain(views.intensity_figure(rows, data, now)) if rows else None,
            },
        )

    @router.get("/api/placements", summary="the page's rows as JSON, with the same filters")
    def placements(data: DashboardData = data_dep, filters: dict[str, str] = filters_dep) -> dict[str, Any]:
        rows = rows_for(filters, data, clock())
        return {"placements": rows, "totals": views.totals(rows)}

    @router.get("/explain/{key:path}", response_class=HTMLResponse, summary="why one placement is what it is")
    def explain_page(
        request: Request, key: RecordKey, tenant: Word | None = None, data: DashboardData = data_dep
    ) -> Response:
        try:
            row = data.reservation(key, tenant)  # the page's rows link with their tenant
        except AmbiguousKey as exc:
            return PlainTextResponse(str(exc), status_code=409)
        if row is None or not row.get("answer"):
            return PlainTextResponse(f"reservation {key}: not in the record", status_code=404)
        return templates.TemplateResponse(
            request, "explain.html", {"key": key, "text": explain.text(explain.account(row))}
        )

    # behind the same credential as the pages where there is one: only the health probes are anonymous
    static_guard = [Depends(reader)] if reader is not None else []

    @router.get("/static/plotly.min.js", include_in_schema=False, dependencies=static_guard)
    def plotly_js() -> FileResponse:
        return FileResponse(_plotly_js(), media_type="text/javascript")

    return router


def local_app(data: DashboardData, clock: Clock) -> FastAPI:
    """The dashboard alone, for ``greenops dashboard`` on loopback: it reads the stack's scheduler
    with the scheduler's token, so the page itself is served only to this machine."""
    from fastapi.responses import RedirectResponse
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    app = FastAPI(title="GreenOps dashboard", docs_url=None, redoc_url=None)
    # loopback names only: a page on another site cannot reach the record through DNS rebinding
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])
    app.include_router(dashboard_router(data, clock))
    app.add_api_route("/", lambda: RedirectResponse("/dashboard"), include_in_schema=False)

    @app.exception_handler(GreenOpsError)
    async def _unreachable(request: Request, exc: GreenOpsError) -> PlainTextResponse:
        return PlainTextResponse(str(exc), status_code=502)  # the scheduler behind it, named

    return app
