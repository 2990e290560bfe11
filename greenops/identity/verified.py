"""API tokens verified lately, so that a caller's next requests skip the record's read.

A lookup (greenops.identity.tokens) is an indexed read of the record, in a worker thread. A token it
found valid is kept here, by its digest, for ``SECONDS``: the requests it makes meanwhile are
answered from memory on the event loop, with no read and no hop to a thread. What this must not
weaken, and how it does not:
- a revocation through this scheduler drops the token at once, and a lookup that was reading while
  a revocation happened keeps nothing (``generation``); a revocation through another replica on the
  same database holds here within ``SECONDS``;
- expiry is checked at every use, against the scheduler's clock;
- only valid tokens are kept: a token refused (unknown, revoked, expired) is read again every time,
  and a token issued through another replica works at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from .principal import Principal

SECONDS = 1.0
MAX_KEPT = 4096


@dataclass(frozen=True)
class Verified:
    principal: Principal
    token_id: str
    name: str
    expires_at: datetime | None  # aware
    until: float  # on the monotonic clock


class VerifiedTokens:
    def __init__(
        self, seconds: float = SECONDS, max_kept: int = MAX_KEPT, monotonic: Callable[[], float] = time.monotonic
    ):
        self.seconds = seconds
        self._max_kept = max_kept
        self._monotonic = monotonic
        self._kept: dict[str, Verified] = {}
        self._generation = 0
        self._lock = threading.Lock()

    @property
    def generation(self) -> int:
        """Read before a lookup and handed to ``keep``: a revocation in between makes it keep nothing."""
        return self._generation

    def verified(self, principal: Principal, token_id: str, name: str, expires_at: datetime | None) -> Verified:
        return Verified(principal, token_id, name, expires_at, self._monotonic() + self.seconds)

    def keep(self, key: str, verified: Verified, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            if len(self._kept) >= self._max_kept:
                now = self._monotonic()
                self._kept = {k: v for k, v in self._kept.items() if v.until > now}
                if len(self._kept) >= self._max_kept:
                    self._kept.clear()
            self._kept[key] = verified

    def get(self, key: str, now: datetime) -> Principal | str | None:
        """The principal of a token kept under ``key``, why it proves none now (it expired), or None:
        not kept, or kept too long (read it again)."""
        with self._lock:
            found = self._kept.get(key)
        if found is None or found.until <= self._monotonic():
            return None
        if found.expires_at is not None and found.expires_at <= now:
            return f"token {found.token_id} ({found.name}) expired"
        return found.principal

    def forget(self, token_id: str) -> None:
        """Told after a revocation of ``token_id`` was committed."""
        with self._lock:
            self._generation += 1
            self._kept = {k: v for k, v in self._kept.items() if v.token_id != token_id}
