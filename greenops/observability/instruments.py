"""prometheus-client instruments made from the names in names.py, and the endpoint that serves a
registry: a process with no web server of its own (the watch loop, the controller) serves
``/metrics`` on a port of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from greenops.observability.names import Metric

_KINDS = {"counter": Counter, "gauge": Gauge, "histogram": Histogram}


def instrument(metric: Metric, registry: CollectorRegistry, buckets: Sequence[float] | None = None) -> Any:
    """The Counter, Gauge or Histogram ``metric`` names, registered in ``registry``; ``buckets``
    (a histogram's) in seconds."""
    extra = {"buckets": buckets} if buckets is not None else {}
    return _KINDS[metric.kind](metric.name, metric.help, metric.labels, registry=registry, **extra)


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
