"""The scheduler's reservation record, as the controller uses it: its own credential (the report
role on the cluster path, every tenant), re-read from its file on every call so a rotated
ServiceAccount token or Secret is picked up. A key is its tenant's, and this credential spans every
tenant: each keyed call names the tenant when the caller knows it (``?tenant=``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx

from greenops.common.clock import parse_time
from greenops.common.errors import GreenOpsError, one_line


class RecordUnavailable(GreenOpsError):
    """The scheduler could not be asked, answered 5xx or 429, or refused the controller's credential
    (401): the whole pass waits for the next."""


class RecordRefused(GreenOpsError):
    """The scheduler refused one request (4xx it was not asked to read, or a key no URL can carry):
    that object's fault, not the scheduler's; a pass skips it and goes on."""


class Record:
    def __init__(self, url: str, token: Callable[[], str], timeout: float = 10.0):
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout)
        self._token = token

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, answers: tuple[int, ...] = (404,), **kw: Any) -> httpx.Response:
        """``answers``: the refusals the caller reads itself (default: 404, no such key)."""
        try:
            r = self._http.request(method, path, headers={"Authorization": f"Bearer {self._token()}"}, **kw)
        except httpx.InvalidURL as exc:  # a key no URL can carry: this request's fault, not the scheduler's
            raise RecordRefused(f"{method} {path!r}: {exc}") from None
        except httpx.HTTPError as exc:
            raise RecordUnavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        if r.status_code >= 400 and r.status_code not in answers:
            said = f"{method} {path}: the scheduler answered {r.status_code}: {one_line(r.text)}"
            # 4xx: the record refused this one request (its key, its body); 5xx and 429: it is unwell;
            # 401: it refuses the controller's own credential, so no request of any pass can succeed
            if r.status_code < 500 and r.status_code not in (401, 429):
                raise RecordRefused(said)
            raise RecordUnavailable(said)
        return r

    def active(self, detail: bool = False) -> list[dict[str, Any]]:
        """Every active cluster-path reservation (holds included), of every tenant; ``detail`` adds
        what was recorded at decision time (the run's duration)."""
        params = {"path": "cluster", **({"detail": "true"} if detail else {})}
        r = self._call("GET", "/reservations", params=params)
        rows: list[dict[str, Any]] = r.json()["reservations"]
        return rows

    def get(self, key: str, *, tenant: str | None = None) -> dict[str, Any] | None:
        """``tenant``'s reservation ``key``; with None, the one tenant's that holds it."""
        r = self._call("GET", f"/reservations/{key}", params=_whose(tenant))
        return None if r.status_code == 404 else r.json()

    def patch(self, key: str, body: dict[str, Any], *, tenant: str | None = None) -> dict[str, Any] | None:
        r = self._call("PATCH", f"/reservations/{key}", json=body, params=_whose(tenant))
        return None if r.status_code == 404 else r.json()

    def completion_token(self, key: str, *, tenant: str | None = None) -> str | None:
        """The reservation's completion token (greenops.reservations.completion); None when one was
        issued already (an earlier pass, before a restart) or the reservation has ended."""
        r = self._call("POST", f"/reservations/{key}/completion-token", answers=(404, 409), params=_whose(tenant))
        if r.status_code in (404, 409):
            return None
        token: str = r.json()["token"]
        return token

    def release(self, key: str, reason: str, *, tenant: str | None = None) -> dict[str, Any] | None:
        r = self._call("DELETE", f"/reservations/{key}", params={"reason": reason[:1024], **_whose(tenant)})
        return None if r.status_code == 404 else r.json()


def _whose(tenant: str | None) -> dict[str, str]:
    # without a tenant the scheduler takes the one of the controller's tenants that holds the key
    # (a 409, RecordRefused, when several do)
    return {} if tenant is None else {"tenant": tenant}


def held_until(row: dict[str, Any]) -> datetime | None:
    value = row.get("held_until")
    return parse_time(value) if value else None


def token_reader(path: str | None, value: str | None) -> Callable[[], str]:
    """The bearer token: the file ``path`` (a projected ServiceAccount token or a mounted Secret),
    re-read at every use, else the fixed ``value``."""
    if path:

        def from_file() -> str:
            try:
                with open(path, encoding="utf-8") as fh:
                    return fh.read().strip()
            except OSError as exc:
                raise RecordUnavailable(f"cannot read the controller's token file {path}: {exc.strerror}") from None

        return from_file
    if value:
        return lambda: value
    raise GreenOpsError("the controller needs its scheduler credential: --token-file or GREENOPS_CONTROLLER_TOKEN")
