"""The scheduler's HTTP contract, from the Pulumi side."""
from __future__ import annotations

from datetime import datetime

from greenops.errors import GreenOpsError
from greenops.httpclient import RetryingClient, detail


class SchedulerUnavailable(GreenOpsError):
    """The scheduler could not be reached or could not decide (5xx, timeout)."""


class SchedulerRefused(GreenOpsError):
    """The scheduler answered 4xx: the request cannot be placed as it is."""


class SchedulerClient(RetryingClient):
    def schedule(self, zones: list[str], deadline: datetime, duration_hours: float, cpu: float, memory: float,
                 origin_zone: str | None = None, jobs: int = 1, earliest_start: datetime | None = None) -> dict:
        body = {
            "number_of_jobs": jobs, "eligible_regions": zones,
            "deadline": deadline.strftime("%Y-%m-%dT%H:%M:%SZ"), "duration": duration_hours,
            "cpu": float(cpu), "memory": float(memory), "req_timeout": max(1.0, self.timeout - 0.5),
        }
        if origin_zone:
            body["origin_zone"] = origin_zone
        if earliest_start:
            body["earliest_start"] = earliest_start.strftime("%Y-%m-%dT%H:%M:%SZ")
        r = self.post("/scheduling", body)
        if r is not None and r.status_code == 200:
            return r.json()
        if r is not None and 400 <= r.status_code < 500:
            raise SchedulerRefused(f"scheduler refused the request (HTTP {r.status_code}): {detail(r)}")
        raise SchedulerUnavailable(f"scheduler at {self.url} did not answer ({self.last_error})")
