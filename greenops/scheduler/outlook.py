"""The scarcity price in the service (opt-in: ``GREENOPS_SCHEDULER_SCARCITY_PRICE``): the price of
greenops.search.scarcity, with the outlook of urgent requests learnt from the record.

An urgent request is one that left its search less than an hour to choose from: its deadline minus
its earliest start minus its run. The outlook expects, in each hour ahead, the urgent vCPUs made in
the same hours of the weeks before (UrgentOutlook). It is read from the record, which every replica
shares, and read again at most every ``refresh`` seconds: the price is a slow signal, and a booking's
latency goal leaves no room for a query of four weeks of the record per request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from greenops.reservations import ReservationStore
from greenops.reservations.slots import SLOT
from greenops.search.scarcity import ScarcityPrice, Urgent, UrgentOutlook

REFRESH_SECONDS = 300.0


def urgent(row: dict[str, Any]) -> Urgent | None:
    """The record row as the outlook learns from it, if its request was urgent."""
    request = row["request"]
    made = row["created_at"].timestamp()
    try:
        earliest = request.get("earliest_start")
        begin = max(made, _epoch(earliest)) if earliest else made
        slack = _epoch(request["deadline"]) - begin - float(request["duration"]) * 3600
    except (KeyError, TypeError, ValueError):  # not the contract's fields: nothing to learn from
        return None
    if slack >= SLOT:
        return None
    run = (row["end_at"] - row["start_at"]).total_seconds()
    return Urgent(made, run, row["milli_cpu"] * row["jobs"] / 1000)


def _epoch(instant: str) -> float:
    """An instant as the record stores its request's (RFC 3339, the contract's UtcInstant)."""
    return datetime.fromisoformat(instant.replace("Z", "+00:00")).timestamp()


class RecordedOutlook:
    """The service's price: ``at(now)`` is a ScarcityPrice whose outlook is the record's urgent
    requests of the last ``weeks`` weeks, re-read when older than ``refresh`` seconds."""

    def __init__(
        self,
        store: ReservationStore,
        weeks: int = 4,
        refresh: float = REFRESH_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.store = store
        self.weeks = weeks
        self.refresh = refresh
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._read_at: float | None = None
        self._price = ScarcityPrice()

    def at(self, now: datetime) -> ScarcityPrice:
        with self._lock:
            if self._read_at is None or self._monotonic() - self._read_at >= self.refresh:
                self._price = self._read(now)
                self._read_at = self._monotonic()
            return self._price

    def _read(self, now: datetime) -> ScarcityPrice:
        first, rows = self.store.made_since(now - timedelta(weeks=self.weeks, days=1))
        past = [u for u in map(urgent, rows) if u is not None]
        known_since = now.timestamp() if first is None else first.timestamp()
        return ScarcityPrice(outlook=UrgentOutlook(past, known_since=known_since, weeks=self.weeks))
