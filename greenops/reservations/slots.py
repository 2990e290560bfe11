"""The hour slots capacity is counted in: the record books a run into the slots it overlaps, and
the scheduler's search looks for free ones."""

from __future__ import annotations

import math

SLOT = 3600.0  # seconds in a slot


def slots_of(start: float, end: float) -> range:
    """The hourly slots (hours since the epoch) a run from ``start`` to ``end`` overlaps."""
    return range(int(start // SLOT), int(math.ceil(end / SLOT)))
