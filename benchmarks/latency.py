"""Latency sampling and its summary, shared by the benchmark scripts (run as scripts, so this
folder is on sys.path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def percentiles(samples: list[float]) -> str:
    s = sorted(samples)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return (
        f"n={len(s)} p50={pick(0.50):.2f} p90={pick(0.90):.2f} p99={pick(0.99):.2f} "
        f"max={s[-1]:.2f} mean={statistics.fmean(s):.2f} ms"
    )


def timed_ms(call: Callable[[int], object], n: int, warmup: int = 0) -> list[float]:
    """Milliseconds of each of ``n`` calls ``call(i)``, after ``warmup`` untimed ones."""
    for i in range(warmup):
        call(i)
    samples = []
    for i in range(n):
        t = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - t) * 1000)
    return samples
