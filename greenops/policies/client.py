"""OPA's placement decision over the Data API, for the Pulumi path (httpx, timeouts, retries)."""
from __future__ import annotations

import time
from typing import Any

import httpx

from greenops.errors import GreenOpsError

DECISION_PATH = "/v1/data/greenops/placement/decision"


class PolicyUnavailable(GreenOpsError):
    """OPA could not be reached or answered something other than a decision."""


class PolicyDenied(GreenOpsError):
    """Policy refused the workload; the message lists OPA's reasons."""


class OpaClient:
    def __init__(self, url: str, timeout: float = 5.0, attempts: int = 3, backoff: float = 0.2,
                 transport: httpx.BaseTransport | None = None, token: str | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._client = httpx.Client(base_url=self.url, timeout=timeout, transport=transport, headers=headers)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "OpaClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def decision(self, workload: dict[str, Any], placed: list[dict] | None = None, zone: str | None = None) -> dict:
        """The decision document; raises PolicyUnavailable (transport) but never on denial."""
        payload: dict[str, Any] = {"workload": workload}
        if placed is not None:
            payload["placed"] = placed
        if zone is not None:
            payload["zone"] = zone
        last = "no attempt made"
        for attempt in range(1, self.attempts + 1):
            try:
                r = self._client.post(DECISION_PATH, json={"input": payload})
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if r.status_code == 200 and isinstance(r.json().get("result"), dict):
                    return r.json()["result"]
                if r.status_code == 200:
                    raise PolicyUnavailable(f"OPA at {self.url} has no greenops placement policy loaded (empty result)")
                last = f"HTTP {r.status_code}: {r.text[:300]}"
                if r.status_code < 500:
                    break
            if attempt < self.attempts:
                time.sleep(self.backoff * attempt)
        raise PolicyUnavailable(f"OPA at {self.url} did not answer the placement query ({last})")

    def require_allowed(self, workload: dict[str, Any], placed: list[dict] | None = None, zone: str | None = None) -> dict:
        d = self.decision(workload, placed, zone)
        if not d.get("allowed"):
            raise PolicyDenied("; ".join(d.get("errors") or ["denied without a reason"]))
        return d
