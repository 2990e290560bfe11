"""A carbon source timed and counted for the scheduler's metrics: every forecast it is asked for
(``series``, ``bands``) is observed by source, and so is every failure, including those a fallback
covered (the decision went on, but the forecast source is down)."""

from __future__ import annotations

import re
import time

from prometheus_client import Counter, Histogram

from greenops.intensity.series import Series

from .base import Bands, CarbonSource, SourceUnavailable


def source_label(name: str) -> str:
    """The kind of source a name describes (``oip(http://…)+profiles`` -> ``oip``): a label stays the
    same whatever URL or parameters the source was given."""
    found = re.match(r"[a-z][a-z-]*", name)
    return found.group(0) if found else "source"


class MeasuredSource(CarbonSource):
    def __init__(self, inner: CarbonSource, seconds: Histogram, errors: Counter):
        self.inner = inner
        self.name = inner.name
        label = source_label(inner.name)
        self._seconds = seconds.labels(label)
        self._errors = errors.labels(label)
        inner.on_fallback = self._errors.inc

    def zones(self) -> frozenset[str]:
        return self.inner.zones()

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        started = time.perf_counter()
        try:
            return self.inner.series(zone, t0, t1, now)
        except SourceUnavailable:
            self._errors.inc()
            raise
        finally:
            self._seconds.observe(time.perf_counter() - started)

    def bands(self, zone: str, t0: float, t1: float, now: float) -> Bands | None:
        started = time.perf_counter()
        try:
            return self.inner.bands(zone, t0, t1, now)
        except SourceUnavailable:
            self._errors.inc()
            raise
        finally:
            self._seconds.observe(time.perf_counter() - started)

    def observed(self, zone: str, t0: float, t1: float) -> Series | None:
        return self.inner.observed(zone, t0, t1)  # the record of the past, not a forecast

    def describe(self) -> str:
        return self.inner.describe()
