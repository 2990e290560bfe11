"""The scheduler's HTTP contract, from the Pulumi side (httpx, timeouts, bounded retries)."""
from __future__ import annotations

import time
from datetime import datetime

import httpx

from greenops.errors import GreenOpsError


class SchedulerUnavailable(GreenOpsError):
    """The scheduler could not be reached or could not decide (5xx, timeout)."""


class SchedulerRefused(GreenOpsError):
    """The scheduler answered 4xx: the request cannot be placed as it is."""


class SchedulerClient:
    def __init__(self, url: str, timeout: float = 10.0, attempts: int = 3, backoff: float = 0.3,
                 transport: httpx.BaseTransport | None = None, token: str | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._client = httpx.Client(base_url=self.url, timeout=timeout, transport=transport, headers=headers)

    def close(self) -> None:
        self._client.close()

    def schedule(self, zones: list[str], deadline: datetime, duration_hours: float, cpu: float, memory: float,
                 origin_zone: str | None = None, jobs: int = 1) -> dict:
        body = {
            "number_of_jobs": jobs, "eligible_regions": zones,
            "deadline": deadline.strftime("%Y-%m-%dT%H:%M:%SZ"), "duration": duration_hours,
            "cpu": float(cpu), "memory": float(memory), "req_timeout": max(1.0, self.timeout - 0.5),
        }
        if origin_zone:
            body["origin_zone"] = origin_zone
        last = "no attempt made"
        for attempt in range(1, self.attempts + 1):
            try:
                r = self._client.post("/scheduling", json=body)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if r.status_code == 200:
                    return r.json()
                detail = _detail(r)
                if 400 <= r.status_code < 500:
                    raise SchedulerRefused(f"scheduler refused the request (HTTP {r.status_code}): {detail}")
                last = f"HTTP {r.status_code}: {detail}"
            if attempt < self.attempts:
                time.sleep(self.backoff * attempt)
        raise SchedulerUnavailable(f"scheduler at {self.url} did not answer ({last})")


def _detail(r: httpx.Response) -> str:
    try:
        return str(r.json().get("detail", r.text[:300]))
    except ValueError:
        return r.text[:300]
