"""The scheduler's HTTP contract, from the Pulumi side. A reservation is its tenant's key: each keyed
call names the tenant it booked under (``?tenant=``), so a credential of several tenants acts on
that tenant's reservation and on no other's of the same key."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient, detail


class SchedulerUnavailable(GreenOpsError):
    """The scheduler could not be reached or could not decide (5xx, timeout)."""


class SchedulerRefused(GreenOpsError):
    """The scheduler answered 4xx: the request cannot be placed as it is."""


@dataclass(frozen=True)
class Reservation:
    """Who books: the record's key, tenant and path, the tenant's quota and the zone -> region map."""

    key: str
    tenant: str
    path: str = "pulumi"
    quota_vcpu: float | None = None
    regions: dict[str, str] = field(default_factory=dict)
    workload: dict[str, Any] | None = None
    explanation: dict[str, Any] | None = None  # policy's account of the eligible set, kept with the booking


class SchedulerClient(RetryingClient):
    def schedule(
        self,
        zones: list[str],
        deadline: datetime,
        duration_hours: float,
        cpu: float,
        memory: float,
        origin_zone: str | None = None,
        jobs: int = 1,
        earliest_start: datetime | None = None,
        reservation: Reservation | None = None,
        queue: bool = False,
    ) -> dict[str, Any]:
        """The scheduler's answer: a placement, or with ``queue`` possibly a Pending one (``phase``
        Pending, its ``position`` and ``reason``: no window has room now, but one could before the
        deadline, and the request waits in the scheduler's queue)."""
        body: dict[str, Any] = {
            "number_of_jobs": jobs,
            "eligible_regions": zones,
            "deadline": stamp(deadline),
            "duration": duration_hours,
            "cpu": float(cpu),
            "memory": float(memory),
            "req_timeout": max(1.0, self.timeout - 0.5),
        }
        if queue:
            body["queue"] = True
        if origin_zone:
            body["origin_zone"] = origin_zone
        if earliest_start:
            body["earliest_start"] = stamp(earliest_start)
        if reservation:
            body.update(
                key=reservation.key,
                tenant=reservation.tenant,
                path=reservation.path,
                regions=reservation.regions,
                workload=reservation.workload,
            )
            if reservation.explanation is not None:
                body["explanation"] = reservation.explanation
            if reservation.quota_vcpu is not None:
                body["tenant_quota_vcpu"] = float(reservation.quota_vcpu)
        return self._answer(self.post("/scheduling", body))

    def report(self, key: str, phase: str, reason: str = "", *, tenant: str) -> dict[str, Any]:
        """Record the placement's phase; Completed and Failed give its zone-hours back."""
        body = {"phase": phase, "reason": reason[:1024]}
        return self._answer(self.request("PATCH", _keyed(key), body, params={"tenant": tenant}))

    def completion_token(self, key: str, *, tenant: str) -> str:
        """A new completion token for the reservation (greenops.reservations.completion): the
        placement's own state is where its one token lives, so a token issued to a pass that did not
        save it is replaced."""
        r = self.request("POST", f"{_keyed(key)}/completion-token", params={"replace": "true", "tenant": tenant})
        if r is not None and r.status_code == 201:
            token: str = r.json()["token"]
            return token
        return str(self._answer(r)["token"])

    def reservation(self, key: str, *, tenant: str) -> dict[str, Any]:
        """The reservation as the record holds it now (its phase, zone, start, reason, ...)."""
        return self._answer(self.request("GET", _keyed(key), params={"tenant": tenant}))

    def completion(self, key: str, *, tenant: str) -> dict[str, Any] | None:
        """What the reservation's run reported of its end, as the record holds it; None: nothing yet."""
        completion: dict[str, Any] | None = self.reservation(key, tenant=tenant).get("completion")
        return completion

    def release(self, key: str, reason: str, *, tenant: str) -> None:
        """Give the reservation back (a key the record does not know is already released)."""
        r = self.request("DELETE", _keyed(key), params={"reason": reason[:1024], "tenant": tenant})
        if r is not None and r.status_code == 404:
            return
        self._answer(r)

    def active(self, key_prefix: str, *, tenant: str) -> list[dict[str, Any]]:
        """The tenant's active reservations whose keys start with ``key_prefix``."""
        r = self.request("GET", "/reservations", params={"key_prefix": key_prefix, "tenant": tenant})
        return list(self._answer(r).get("reservations") or [])

    def stack_seen(self, stack: str, *, tenant: str) -> None:
        """Tell the record that a Pulumi pass over ``stack`` runs now (greenops.reservations.orphans)."""
        self._answer(self.request("PUT", f"/stacks/{quote(stack, safe='/')}", params={"tenant": tenant}))

    def outages(self) -> list[dict[str, Any]]:
        """The provider regions an admin declared unavailable (greenops.scheduler.api.outages)."""
        return list(self._answer(self.request("GET", "/outages")).get("outages") or [])

    def _answer(self, r: httpx.Response | None) -> dict[str, Any]:
        if r is not None and r.status_code in (200, 202):  # 202: a request waiting in the queue
            answer: dict[str, Any] = r.json()
            return answer
        if r is not None and 400 <= r.status_code < 500:
            waited = f" (after waiting {self.waited:.0f} s as it asked)" if r.status_code == 429 and self.waited else ""
            raise SchedulerRefused(f"scheduler refused the request (HTTP {r.status_code}){waited}: {detail(r)}")
        raise SchedulerUnavailable(f"scheduler at {self.url} did not answer ({self.last_error})")


def _keyed(key: str) -> str:
    """The route of reservation ``key``: each of its segments URL-encoded, the slashes kept."""
    return f"/reservations/{quote(key, safe='/')}"
