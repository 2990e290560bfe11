"""The dashboard's routes: the page, its data as JSON, and plotly.js from the pinned package."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Callable

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse

from greenops.dashboard import views
from greenops.dashboard.data import DashboardData

TEMPLATES = Path(__file__).parent / "templates"


def _plotly_js() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _plain(figure) -> dict:
    """The figure as plain JSON data (plotly's encoder knows datetimes and numpy), for the template's
    ``tojson``, which escapes it for a script element: workload names are the users' text."""
    return json.loads(figure.to_json())


def dashboard_router(data: DashboardData, clock: Callable[[], datetime]) -> APIRouter:
    """Read-only routes under /dashboard; the caller adds its authentication as dependencies."""
    from fastapi.templating import Jinja2Templates

    templates = Jinja2Templates(directory=str(TEMPLATES))
    router = APIRouter(prefix="/dashboard", tags=["dashboard"])

    def chosen(request: Request) -> dict[str, str]:
        return {k: request.query_params.get(k, "") for k in views.FILTERS}

    @router.get("", response_class=HTMLResponse, summary="the dashboard page")
    def page(request: Request):
        now = clock()
        every = views.placement_rows(data.reservations())
        picked = chosen(request)
        rows = views.filtered(every, picked)
        return templates.TemplateResponse(request, "dashboard.html", {
            "rows": rows, "totals": views.totals(rows), "options": views.options(every), "chosen": picked,
            "now": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "timeline": _plain(views.timeline_figure(rows, now)) if rows else None,
            "intensity": _plain(views.intensity_figure(rows, data, now)) if rows else None,
        })

    @router.get("/api/placements", summary="the page's rows as JSON, with the same filters")
    def placements(request: Request) -> dict:
        rows = views.filtered(views.placement_rows(data.reservations()), chosen(request))
        return {"placements": rows, "totals": views.totals(rows)}

    @router.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js():
        return FileResponse(_plotly_js(), media_type="text/javascript")

    return router


def local_app(data: DashboardData, clock: Callable[[], datetime]):
    """The dashboard alone, for ``greenops dashboard`` on loopback: it reads the stack's scheduler
    with the scheduler's token, so the page itself is served only to this machine."""
    from fastapi import FastAPI
    from fastapi.responses import RedirectResponse

    app = FastAPI(title="GreenOps dashboard", docs_url=None, redoc_url=None)
    app.include_router(dashboard_router(data, clock))
    app.add_api_route("/", lambda: RedirectResponse("/dashboard"), include_in_schema=False)
    return app
