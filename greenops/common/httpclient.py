"""The one HTTP client shape every GreenOps caller uses: timeouts, bounded retries, bearer token,
W3C trace context."""

from __future__ import annotations

import functools
import os
import random
import ssl
import time
from typing import Any, Self

import certifi
import httpx

from greenops.observability import tracing


class RetryingClient:
    """Sends JSON; retries transport errors and 5xx answers, returns anything else at once.

    ``post`` returns the final response, or None when no attempt got an answer; ``last_error``
    then says why, for the caller's own error message.

    ``wait_budget`` is how many seconds one request may spend waiting out a rate limit: a 429
    and its ``Retry-After``. The server did nothing, so the wait costs no attempt; an answer asking
    for longer than the budget left is returned at once, so the caller names the refusal instead of
    hanging. The default, 0, waits for nothing: an interactive caller sees the refusal and its
    retry time. A 503's Retry-After is not waited for: a dependency that is down would hold every
    call of a pass for seconds each, where the short backoff names the outage soon.
    """

    def __init__(
        self,
        url: str,
        timeout: float = 10.0,
        attempts: int = 3,
        backoff: float = 0.3,
        transport: httpx.BaseTransport | None = None,
        token: str | None = None,
        ca_certificate: str | None = None,
        wait_budget: float = 0.0,
    ):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff
        self.wait_budget = wait_budget
        self.waited = 0.0  # seconds the last request spent waiting out Retry-After
        self.last_error = "no attempt made"
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._client = httpx.Client(
            base_url=self.url, timeout=timeout, transport=transport, headers=headers, verify=trust(ca_certificate)
        )
        tracing.instrument_client(self._client)  # a span per attempt; the caller's trace context sent on

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response | None:
        return self.request("POST", path, body)

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, params: dict[str, Any] | None = None
    ) -> httpx.Response | None:
        response = None
        self.waited = 0.0
        attempt = 0  # answered attempts; a rate limit's wait is not one: the server did nothing
        while attempt < self.attempts:
            try:
                response = self._client.request(method, path, json=body, params=params)
            except httpx.HTTPError as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                response = None
            else:
                wait = self._asked_wait(response)
                if wait is not None:
                    self._wait(wait)
                    continue
                if response.status_code < 500:
                    return response
                self.last_error = f"HTTP {response.status_code}: {detail(response)}"
            attempt += 1
            if attempt < self.attempts:
                time.sleep(self.backoff * attempt)
        return response

    def _asked_wait(self, response: httpx.Response) -> float | None:
        """The seconds to wait before asking again, when the server's rate limit asked for a wait
        that fits in what is left of the budget; else None."""
        if response.status_code != 429:
            return None
        try:
            asked = float(response.headers.get("retry-after", ""))
        except ValueError:
            return None  # absent, or an HTTP date, which the platform's servers never send
        # up to a second of jitter: callers refused in the same window do not all return at once
        wait = max(0.5, asked) + random.uniform(0.0, 1.0)
        return wait if self.waited + wait <= self.wait_budget else None

    def _wait(self, seconds: float) -> None:
        self.waited += seconds
        time.sleep(seconds)


def trust(ca_certificate: str | None) -> ssl.SSLContext:
    """httpx's usual trust (which honours SSL_CERT_FILE and SSL_CERT_DIR), plus the platform's own
    CA when given (OPA's serving certificate is signed by it), so no process-wide SSL_CERT_FILE is
    needed.

    One context per CA (and trust settings), shared by every client of the process (a context is
    safe to share between threads): building one loads and parses the whole CA bundle, ~30 ms,
    which the Placement provider paid for each of its three clients per workload, two thirds of its
    time when placing."""
    return _context(ca_certificate or None, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=8)
def _context(ca_certificate: str | None, _cert_file: str | None, _cert_dir: str | None) -> ssl.SSLContext:
    if not ca_certificate:
        return httpx.create_ssl_context()
    context = ssl.create_default_context(cafile=certifi.where())
    context.load_verify_locations(cadata=ca_certificate)
    return context


def detail(r: httpx.Response, field: str = "detail") -> str:
    """The server's own explanation: ``field`` of a JSON error body when there is one (FastAPI's
    ``detail``, OPA's ``message``), else the start of the body."""
    try:
        payload = r.json()
    except ValueError:
        return r.text[:300]
    return str(payload.get(field, r.text[:300])) if isinstance(payload, dict) else r.text[:300]
