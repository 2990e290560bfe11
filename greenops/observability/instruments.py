"""prometheus-client instruments built from the metric definitions in names.py, so a name, its help
and its labels are written once, and the endpoint that serves a registry.

Each component passes its own CollectorRegistry, never the library's global one: two apps in one
process (tests, the demo) would otherwise collide on the same names. Values known only when
scraped (read from the reservation record) are yielded as families by a custom Collector; the
``*_family`` helpers build those from the same definitions. A process with no web server of its
own (the watch loop, the controller) serves ``/metrics`` on a port of its own (``MetricsEndpoint``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from .names import Metric


def registry() -> CollectorRegistry:
    """A component's own registry. The library's ``*_created`` samples are switched off (a
    process-wide setting): in the text format each is one more series per counter and histogram,
    doubling what Prometheus stores for a start time it does not use."""
    disable_created_metrics()  # type: ignore[no-untyped-call]  # the library leaves it unannotated
    return CollectorRegistry()


def _check(metric: Metric, kind: str) -> None:
    if metric.kind != kind:
        raise ValueError(f"{metric.name} is a {metric.kind}, not a {kind}")


def counter(metric: Metric, registry: CollectorRegistry) -> Counter:
    _check(metric, "counter")
    return Counter(metric.name, metric.help, metric.labels, registry=registry)


def gauge(metric: Metric, registry: CollectorRegistry) -> Gauge:
    _check(metric, "gauge")
    return Gauge(metric.name, metric.help, metric.labels, registry=registry)


def histogram(metric: Metric, registry: CollectorRegistry, buckets: Sequence[float] | None = None) -> Histogram:
    _check(metric, "histogram")
    if buckets is None:
        return Histogram(metric.name, metric.help, metric.labels, registry=registry)
    return Histogram(metric.name, metric.help, metric.labels, registry=registry, buckets=buckets)


def instrument(metric: Metric, registry: CollectorRegistry, buckets: Sequence[float] | None = None) -> Any:
    """The Counter, Gauge or Histogram ``metric`` names, by its kind; ``buckets`` (a histogram's) in seconds."""
    if metric.kind == "histogram":
        return histogram(metric, registry, buckets)
    return counter(metric, registry) if metric.kind == "counter" else gauge(metric, registry)


def gauge_family(metric: Metric) -> GaugeMetricFamily:
    _check(metric, "gauge")
    return GaugeMetricFamily(metric.name, metric.help, labels=metric.labels)


def counter_family(metric: Metric) -> CounterMetricFamily:
    _check(metric, "counter")
    return CounterMetricFamily(metric.name, metric.help, labels=metric.labels)


class MetricsEndpoint:
    """``GET /metrics`` of ``registry`` on ``address``:``port`` (port 0: any free one, see ``port``),
    in a daemon thread, until ``close``."""

    def __init__(self, registry: CollectorRegistry, address: str, port: int):
        self._server, self._thread = start_http_server(port, address, registry)
        self.address = address
        self.port: int = self._server.server_port

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
