"""A price on the capacity a booking would fill, so that one request at a time does not take the clean
hours that later, less flexible requests need.

Deciding one request at a time, the search gives each the cleanest window with room. Under tight
capacity that is a poor use of the clean hours: a request with two days of slack fills the cleanest
hours of the days ahead, and the requests that arrive later with no slack find them full and run in
a dirty zone. An offline plan would give those hours to whoever has no other good choice.

The price is the online primal-dual answer to this (as in online knapsack and online matching): each
zone-hour costs more the fuller it would be, ``scale * (B**u - 1) / (B - 1)`` at utilisation ``u``
after the booking, so an empty hour is free and a full one costs ``scale``. ``scale`` is the spread of
the request's own forecast windows (the worst minus the best), so a nearly full clean hour is worth
no more than the request's dirtiest choice. A request with good alternatives then moves to them
before a clean hour fills; one with none (no slack, one zone) pays, since its forecast gap is larger
than any price. Nothing booked ever moves, and capacity is still the ledger's hard limit: the price
only orders the choices that fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from greenops.reservations.slots import SLOT
from greenops.search.spans import Spans

if TYPE_CHECKING:
    from greenops.search.algorithm import CapacityLedger

# (zone, first slot, how many slots, now) -> the vCPUs expected in each slot from requests not yet made
Outlook = Callable[[str, int, int, float], np.ndarray]


@dataclass(frozen=True)
class ScarcityPrice:
    steepness: float = 1024.0  # B: how late in filling an hour the price rises (higher: later and sharper)
    outlook: Outlook | None = None  # the vCPUs that requests yet to come will need in each hour

    def curve(self, utilisation: np.ndarray) -> np.ndarray:
        """The price of an hour at ``utilisation`` as a share of the scale: 0 when empty, 1 when full, and
        more past full, where the outlook expects more than the hour holds."""
        u = np.clip(utilisation, 0.0, 1.0)
        over = np.maximum(utilisation - 1.0, 0.0)  # an hour the outlook overfills: dearer the more it does
        return np.asarray((self.steepness**u - 1.0) / (self.steepness - 1.0) + over)

    def of(
        self, ledger: CapacityLedger, zone: str, starts: np.ndarray, duration: float, cpu: float, now: float
    ) -> np.ndarray:
        """For each start, the mean price share over the hours the run would fill."""
        if math.isinf(ledger.capacity_vcpu) or len(starts) == 0:
            return np.zeros(len(starts))
        spans = Spans.of(starts, duration)
        used = ledger.used(zone, spans.first, spans.count) + cpu
        if self.outlook is not None:
            used = used + self.outlook(zone, spans.first, spans.count, now)
        share = self.curve(used / ledger.capacity_vcpu)
        return np.asarray(spans.sums(share) / np.maximum(spans.end - spans.begin, 1))


@dataclass(frozen=True)
class Urgent:
    """A request that had to start when it was made (no slack): what the outlook learns from."""

    made: float  # epoch seconds
    duration: float  # seconds
    cpu: float


class UrgentOutlook:
    """The vCPUs that urgent requests yet to come will need in each hour, expected from those made
    before: the same hours one week earlier (the week's rhythm), averaged over up to ``weeks`` weeks;
    a day earlier while less than a week is known. Only requests made after ``now`` count: the hours
    a request made already books are in the ledger."""

    def __init__(self, past: list[Urgent], known_since: float, weeks: int = 4):
        self.known_since = known_since
        self.weeks = weeks
        self._past = sorted(past, key=lambda u: u.made)
        self._made = np.array([u.made for u in self._past])

    def add(self, u: Urgent) -> None:
        self._past.append(u)
        self._made = np.append(self._made, u.made)

    def __call__(self, zone: str, first: int, n: int, now: float) -> np.ndarray:
        week = 7 * 86400.0
        known = now - self.known_since
        periods = [k * week for k in range(1, self.weeks + 1) if k * week <= known] or (
            [86400.0] if known >= 86400.0 else []
        )
        out = np.zeros(n)
        for back in periods:
            out += self._load(first * SLOT - back, n, now - back)
        return out / max(len(periods), 1)

    def _load(self, t0: float, n: int, after: float) -> np.ndarray:
        """The vCPUs in each of ``n`` hours from ``t0`` of the urgent runs made after ``after``."""
        out = np.zeros(n)
        i = int(np.searchsorted(self._made, after, "right"))
        j = int(np.searchsorted(self._made, t0 + n * SLOT, "left"))
        for u in self._past[i:j]:
            a = max(int((u.made - t0) // SLOT), 0)
            z = min(int(math.ceil((u.made + u.duration - t0) / SLOT)), n)
            if a < z:
                out[a:z] += u.cpu
        return out
