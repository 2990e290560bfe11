"""``greenops token``: issue, list and revoke the scheduler's API tokens, as its admin.

The admin's credential is the scheduler's bootstrap admin token, read from
GREENOPS_SCHEDULER_ADMIN_TOKEN (never a flag: it would show in ps and in shell history). A new
token is printed once; the scheduler keeps only its digest.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail

ADMIN_TOKEN_VARIABLE = "GREENOPS_SCHEDULER_ADMIN_TOKEN"


def admin_client(url: str, ca_certificate: str | None = None) -> RetryingClient:
    token = os.environ.get(ADMIN_TOKEN_VARIABLE)
    if not token:
        raise GreenOpsError(f"{ADMIN_TOKEN_VARIABLE} is not set: token commands act as the scheduler's admin")
    return RetryingClient(url, token=token, ca_certificate=ca_certificate)


def _answer(client: RetryingClient, r: Any, ok: int = 200) -> Any:
    if r is None:
        raise GreenOpsError(f"scheduler at {client.url} did not answer ({client.last_error})")
    if r.status_code != ok:
        raise GreenOpsError(f"scheduler at {client.url} refused (HTTP {r.status_code}): {detail(r)}")
    return r.json()


def issue(client: RetryingClient, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = _answer(client, client.post("/credentials", body), ok=201)
    return answer


def listing(client: RetryingClient) -> list[dict[str, Any]]:
    answer: list[dict[str, Any]] = _answer(client, client.request("GET", "/credentials"))["credentials"]
    return answer


def revoke(client: RetryingClient, token_id: str) -> dict[str, Any]:
    answer: dict[str, Any] = _answer(client, client.request("DELETE", f"/credentials/{quote(token_id, safe='')}"))
    return answer


def declare_outage(client: RetryingClient, region: str, reason: str) -> dict[str, Any]:
    """Declare ``provider/region`` unavailable (greenops.scheduler.api.outages)."""
    answer: dict[str, Any] = _answer(client, client.request("PUT", f"/outages/{_region(region)}", {"reason": reason}))
    return answer


def lift_outage(client: RetryingClient, region: str) -> dict[str, Any]:
    answer: dict[str, Any] = _answer(client, client.request("DELETE", f"/outages/{_region(region)}"))
    return answer


def outages(client: RetryingClient) -> list[dict[str, Any]]:
    answer: list[dict[str, Any]] = _answer(client, client.request("GET", "/outages"))["outages"]
    return answer


def _region(region: str) -> str:
    provider, _, name = region.partition("/")
    if not provider or not name:
        raise GreenOpsError(f"region {region!r}: give it as provider/region, e.g. azure/westeurope")
    return f"{quote(provider, safe='')}/{quote(name, safe='')}"
