"""Carbon-intensity series and the window arithmetic the scheduler is built on.

A series is piecewise constant: ``values[i]`` holds over ``[start + i*step, start + (i+1)*step)``,
which is how Electricity Maps and the Let's Wait Awhile traces report intensity. Times are UTC
epoch seconds (floats), so start times need not fall on a data point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import numpy as np
import pandas as pd

_KEPT_DURATIONS = 16  # a series' breakpoints are kept for this many durations at most


def to_epoch(t: datetime) -> float:
    return t.astimezone(UTC).timestamp()


def from_epoch(s: float) -> datetime:
    return datetime.fromtimestamp(s, tz=UTC)


def ceil_second(s: float) -> datetime:
    """An instant as the service reports it, rounded up to the second: a start a fraction of a
    second after `now` must not be reported before it."""
    return from_epoch(math.ceil(s - 1e-6))


@dataclass(frozen=True)
class Series:
    start: float  # epoch seconds of values[0]
    step: float  # seconds
    values: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        if self.step <= 0:
            raise ValueError("series step must be positive")
        if self.values.ndim != 1 or len(self.values) == 0:
            raise ValueError("series needs at least one value")
        if not np.all(np.isfinite(self.values)):
            raise ValueError("series contains missing or infinite values")

    @property
    def end(self) -> float:
        return self.start + self.step * len(self.values)

    # A decision reads one series several times (the search, the baseline, the windows weighed):
    # what does not depend on the window is computed once per series, and read-only, since shared.
    @cached_property
    def boundaries(self) -> np.ndarray:
        return _read_only(self.start + self.step * np.arange(len(self.values) + 1))

    @cached_property
    def _integral(self) -> np.ndarray:
        """The running integral of intensity over time at each boundary (g/kWh x seconds)."""
        return _read_only(np.concatenate(([0.0], np.cumsum(self.values * self.step))))

    @classmethod
    def from_pandas(cls, s: pd.Series) -> Series:
        """A regular, UTC-indexed pandas series (gaps are filled forward, then backward)."""
        if len(s) < 2:
            raise ValueError("need at least two points to infer the step")
        idx = pd.DatetimeIndex(s.index)
        idx = idx.tz_localize("UTC") if idx.tz is None else idx.tz_convert("UTC")
        step = float(pd.Series(idx).diff().dropna().mode().iloc[0].total_seconds())
        regular = pd.Series(s.to_numpy(dtype=float), index=idx).sort_index()
        regular = regular[~regular.index.duplicated()].asfreq(f"{int(step)}s").ffill().bfill()
        return cls(regular.index[0].timestamp(), step, regular.to_numpy(dtype=float))

    def covers(self, t0: float, t1: float) -> bool:
        return self.start <= t0 + 1e-6 and t1 <= self.end + 1e-6

    def value_at(self, t: np.ndarray | float) -> np.ndarray:
        i = np.clip(((np.asarray(t) - self.start) // self.step).astype(int), 0, len(self.values) - 1)
        values: np.ndarray = self.values[i]
        return values

    def window_means(self, starts: np.ndarray, duration: float) -> np.ndarray:
        """Mean intensity over ``[s, s + duration)`` for every start ``s`` (exact for steps)."""
        b, cum = self.boundaries, self._integral
        lo = np.interp(starts, b, cum)
        hi = np.interp(starts + duration, b, cum)
        means: np.ndarray = (hi - lo) / duration
        return means

    def breakpoints(self, duration: float) -> tuple[np.ndarray, np.ndarray]:
        """Where a window of ``duration`` starts or ends on a data point (the boundaries and the
        boundaries less ``duration``, sorted and distinct: the candidate starts before they are cut
        to a search's range, algorithm.candidates), and the window mean from each. Kept per
        duration: a series kept between decisions (sources.cached) is searched again and again for
        the same few durations; a mean depends on its own start alone, so the kept one is the very
        value a search would work out."""
        found = self._breakpoints.get(duration)
        if found is None:
            b = self.boundaries
            points = np.concatenate((b, b - duration))
            points.sort()
            points = _read_only(points[np.concatenate(([True], points[1:] != points[:-1]))])
            found = (points, _read_only(self.window_means(points, duration)))
            if len(self._breakpoints) >= _KEPT_DURATIONS:
                self._breakpoints.clear()
            self._breakpoints[duration] = found
        return found

    @cached_property
    def _breakpoints(self) -> dict[float, tuple[np.ndarray, np.ndarray]]:
        return {}

    def bounds(self, t0: float, t1: float) -> tuple[int, int]:
        """The indices ``[i0, i1)`` of the data points overlapping ``[t0, t1)``."""
        i0 = max(0, int((t0 - self.start) // self.step))
        i1 = min(len(self.values), int(np.ceil((t1 - self.start) / self.step)))
        return i0, i1

    def slice(self, t0: float, t1: float) -> Series:
        """The data points overlapping ``[t0, t1)``."""
        return self.cut(*self.bounds(t0, t1))

    def cut(self, i0: int, i1: int) -> Series:
        """The data points ``[i0, i1)``."""
        return Series(self.start + i0 * self.step, self.step, self.values[i0:i1])


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
