"""The dashboard: a read-only web page over the reservation record (both paths).

Served by the scheduler at ``/dashboard`` (in a cluster, behind the scheduler's bearer token), and
on loopback by ``greenops dashboard --stack S``, which reads the stack's scheduler over HTTP. The
page is rendered on the server (Jinja2); its charts are Plotly figures built in Python and drawn by
plotly.js, served from the pinned ``plotly`` package, so the page needs nothing from the internet.
"""

from greenops.insight.dashboard.data import DashboardData, Forecast, SchedulerData
from greenops.insight.dashboard.routes import dashboard_router

__all__ = ["DashboardData", "Forecast", "SchedulerData", "dashboard_router"]
