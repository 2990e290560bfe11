"""The hour slots that runs of one duration from many candidate starts overlap, in one array, so a
per-slot quantity (slots full, a price) is summed over each run without a loop."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from greenops.reservations.slots import SLOT


@dataclass(frozen=True)
class Spans:
    first: int  # the first slot any of the runs overlaps
    count: int  # how many slots from ``first`` they overlap in all
    begin: np.ndarray  # each run's first slot, counted from ``first``
    end: np.ndarray  # each run's end slot (exclusive), counted from ``first``

    @classmethod
    def of(cls, starts: np.ndarray, duration: float) -> Spans:
        first = int(starts.min() // SLOT)
        last = int(math.ceil((starts.max() + duration) / SLOT))
        begin = (starts // SLOT).astype(int) - first
        end = np.ceil((starts + duration) / SLOT).astype(int) - first
        return cls(first, last - first, begin, end)

    def sums(self, per_slot: np.ndarray) -> np.ndarray:
        """For each run, the sum of ``per_slot`` (``count`` values from ``first``) over its slots."""
        summed = np.concatenate(([0.0], np.cumsum(per_slot, dtype=float)))
        return np.asarray(summed[self.end] - summed[self.begin])
