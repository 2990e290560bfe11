"""A process's /metrics read over HTTP and parsed with prometheus-client's own parser: the samples,
looked up by the names in greenops/observability/names.py."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from prometheus_client.parser import text_string_to_metric_families

from greenops.observability.names import Metric

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str, headers: dict[str, str] | None = None) -> Samples:
    r = httpx.get(url, headers=headers, timeout=10)
    r.raise_for_status()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def value(samples: Samples, metric: Metric, suffix: str = "", **labels: str) -> float | None:
    """The sample of ``metric`` (``suffix``: a histogram's ``_count``, ``_sum``) with exactly these labels."""
    return samples.get((metric.series + suffix, tuple(sorted(labels.items()))))


def wait_for(url: str, ready: Callable[[Samples], bool], timeout: float = 180.0, what: str = "") -> Samples:
    """Scrape until ``ready`` holds for the samples; fails with the last scrape's samples."""
    deadline = time.monotonic() + timeout
    samples: Samples = {}
    while time.monotonic() < deadline:
        try:
            samples = scrape(url)
        except httpx.HTTPError:
            samples = {}
        if samples and ready(samples):
            return samples
        time.sleep(0.2)
    greenops = {k: v for k, v in samples.items() if k[0].startswith("greenops_")}
    raise AssertionError(f"/metrics never showed {what or 'the condition'} within {timeout:.0f}s: {greenops}")
