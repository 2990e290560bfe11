"""OPA's placement decision over the Data API, for the Pulumi path (httpx, timeouts, retries)."""

from __future__ import annotations

from typing import Any

from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail

DECISION_PATH = "/v1/data/greenops/placement/decision"


class PolicyUnavailable(GreenOpsError):
    """OPA could not be reached or answered something other than a decision."""


class PolicyDenied(GreenOpsError):
    """Policy refused the workload; the message lists OPA's reasons."""


class PolicyUnauthorized(PolicyUnavailable):
    """OPA (run with --authentication=token) refused the caller's bearer token, or got none."""


class OpaClient(RetryingClient):
    """``token``: OPA's query token (greenops:opaToken), sent as ``Authorization: Bearer ...``."""

    def __init__(
        self,
        url: str,
        timeout: float = 5.0,
        attempts: int = 3,
        backoff: float = 0.2,
        token: str | None = None,
        **kw: Any,
    ):
        super().__init__(url, timeout, attempts, backoff, token=token, **kw)
        self.has_token = bool(token)

    def decision(self, workload: dict[str, Any], zone: str | None = None) -> dict[str, Any]:
        """The decision document; raises PolicyUnavailable (transport) but never on denial."""
        payload: dict[str, Any] = {"workload": workload}
        if zone is not None:
            payload["zone"] = zone
        r = self.post(DECISION_PATH, {"input": payload})
        if r is not None and r.status_code == 200:
            result = r.json().get("result")
            if isinstance(result, dict):
                return result
            raise PolicyUnavailable(f"OPA at {self.url} has no greenops placement policy loaded (empty result)")
        if r is not None and r.status_code in (401, 403):
            what = "refused the bearer token" if self.has_token else "requires a bearer token and none was sent"
            raise PolicyUnauthorized(
                f"OPA at {self.url} {what} (HTTP {r.status_code}: {detail(r, 'message')}); "
                "set greenops:opaToken (pulumi config set --secret) to OPA's query token"
            )
        if r is not None:
            self.last_error = f"HTTP {r.status_code}: {r.text[:300]}"
        raise PolicyUnavailable(f"OPA at {self.url} did not answer the placement query ({self.last_error})")

    def require_allowed(self, workload: dict[str, Any], zone: str | None = None) -> dict[str, Any]:
        d = self.decision(workload, zone)
        if not d.get("allowed"):
            raise PolicyDenied("; ".join(d.get("errors") or ["denied without a reason"]))
        return d
