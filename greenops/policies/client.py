"""OPA's placement decision over the Data API, for the Pulumi path (httpx, timeouts, retries)."""
from __future__ import annotations

from typing import Any

from greenops.errors import GreenOpsError
from greenops.httpclient import RetryingClient

DECISION_PATH = "/v1/data/greenops/placement/decision"


class PolicyUnavailable(GreenOpsError):
    """OPA could not be reached or answered something other than a decision."""


class PolicyDenied(GreenOpsError):
    """Policy refused the workload; the message lists OPA's reasons."""


class OpaClient(RetryingClient):
    def __init__(self, url: str, timeout: float = 5.0, attempts: int = 3, backoff: float = 0.2, **kw):
        super().__init__(url, timeout, attempts, backoff, **kw)

    def decision(self, workload: dict[str, Any], placed: list[dict] | None = None, zone: str | None = None) -> dict:
        """The decision document; raises PolicyUnavailable (transport) but never on denial."""
        payload: dict[str, Any] = {"workload": workload}
        if placed is not None:
            payload["placed"] = placed
        if zone is not None:
            payload["zone"] = zone
        r = self.post(DECISION_PATH, {"input": payload})
        if r is not None and r.status_code == 200:
            result = r.json().get("result")
            if isinstance(result, dict):
                return result
            raise PolicyUnavailable(f"OPA at {self.url} has no greenops placement policy loaded (empty result)")
        if r is not None:
            self.last_error = f"HTTP {r.status_code}: {r.text[:300]}"
        raise PolicyUnavailable(f"OPA at {self.url} did not answer the placement query ({self.last_error})")

    def require_allowed(self, workload: dict[str, Any], placed: list[dict] | None = None, zone: str | None = None) -> dict:
        d = self.decision(workload, placed, zone)
        if not d.get("allowed"):
            raise PolicyDenied("; ".join(d.get("errors") or ["denied without a reason"]))
        return d
