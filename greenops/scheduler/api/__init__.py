"""The scheduler's HTTP API: the app (``create_app``, app.py) and one router per resource:
scheduling, reservations, credentials, forecast, health, and the Prometheus exposition."""

from greenops.scheduler.api.app import InsecureConfiguration, create_app
from greenops.scheduler.decider import MAX_WORK

__all__ = ["MAX_WORK", "InsecureConfiguration", "create_app"]
