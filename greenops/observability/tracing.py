"""Traces: OpenTelemetry spans for a placement, exported over OTLP/HTTP when an endpoint is set.

Off by default. ``setup_tracing(service)`` installs a TracerProvider with a BatchSpanProcessor and
the OTLP/HTTP exporter only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set; everything else (headers, timeout, sampler, batch
delay, resource attributes, propagators) is the SDK's own reading of the standard ``OTEL_*``
variables. Without an endpoint nothing is installed: spans are the API's no-op ones, which still
carry a caller's context through (a traceparent received is sent on), and no instrumentation is
added to the scheduler's app or its database engine.

Context crosses processes as W3C trace context: in HTTP headers (traceparent, tracestate: the
default propagator), and to a child process in the environment variables ``TRACEPARENT`` and
``TRACESTATE`` (OpenTelemetry's environment carrier). That is how a pass reaches the Pulumi engine's
dynamic-provider process, which the engine starts with the CLI's environment.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

from opentelemetry import context, propagate, trace

if TYPE_CHECKING:
    import httpx
    from fastapi import FastAPI
    from opentelemetry.sdk.trace import TracerProvider
    from sqlalchemy import Engine

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"  # every signal's; the traces-only one wins
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ENDPOINT_VARIABLE)
CONTEXT_VARIABLES = ("TRACEPARENT", "TRACESTATE")
# probes and scrapes are not placements: no server span for them
UNTRACED_ROUTES = "/healthz,/readyz,/metrics"

F = TypeVar("F", bound=Callable[..., Any])
_lock = threading.Lock()
_provider: TracerProvider | None = None


def endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """Where traces go (the traces-only variable first, as the exporter reads them), or None: off."""
    env = os.environ if env is None else env
    return next((env[v] for v in ENDPOINT_VARIABLES if env.get(v)), None)


def setup_tracing(service_name: str) -> bool:
    """Install export for this process when an endpoint is configured; True when tracing is on.
    Idempotent: the first call's service name stays (a process is one service)."""
    global _provider
    with _lock:
        if _provider is not None:
            return True
        if not endpoint():
            return False
        # imported only when on: a process without tracing never loads the SDK
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        # The global provider can be set once per process, and the Pulumi SDK sets its own (without
        # an exporter unless PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT is set) when pulumi is imported in a
        # process started with TRACEPARENT: the dynamic provider's, during a traced pass. The
        # platform's spans therefore come from tracer(), which is ours whoever holds the global one.
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            trace.set_tracer_provider(provider)
        _provider = provider
        return True


def enabled() -> bool:
    return _provider is not None


def tracer(name: str) -> trace.Tracer:
    """The platform's tracer: this process's exporting one when tracing is on, else the global
    one (a no-op that still carries a caller's context through)."""
    return (_provider or trace.get_tracer_provider()).get_tracer(name)


def spanned(name: str) -> Callable[[F], F]:
    """Runs the decorated function in a span ``name`` (its tracer resolved at each call)."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with tracer(function.__module__).start_as_current_span(name):
                return function(*args, **kwargs)

        return cast(F, run)

    return decorate


def instrument_client(client: httpx.Client) -> None:
    """A client span per request, and the current trace context sent as traceparent (a no-op span's
    when this process exports nothing: the caller's context still reaches the server)."""
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    HTTPXClientInstrumentor.instrument_client(client, tracer_provider=_provider)  # None: the global one


def flush(timeout_millis: int = 5000) -> None:
    """Export what has ended now: for a process that may be killed rather than exit (the dynamic
    provider, which the engine stops when the update ends)."""
    if _provider is not None:
        _provider.force_flush(timeout_millis)


def instrument_app(app: FastAPI) -> None:
    """A server span per request, child of the caller's traceparent (when tracing is on)."""
    if _provider is None:
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(
        app, tracer_provider=_provider, excluded_urls=UNTRACED_ROUTES, exclude_spans=["receive", "send"]
    )


def instrument_engine(engine: Engine) -> None:
    """A span per statement on ``engine`` (when tracing is on); statements carry no parameter values."""
    if _provider is None:
        return
    from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
    from opentelemetry.metrics import NoOpMeterProvider

    # The instrumentation's engine listener alone: its instrumentor would also patch SQLAlchemy's
    # create_engine everywhere, asyncio's included (which needs greenlet, not installed), and it
    # declares SQLAlchemy < 2.1, whose cursor events 2.1 keeps (tests/observability receives the
    # spans). Its connection-pool metric is not the platform's (greenops.observability.names).
    EngineTracer(  # type: ignore[no-untyped-call]
        _provider.get_tracer("opentelemetry.instrumentation.sqlalchemy"),
        engine,
        NoOpMeterProvider().get_meter(__name__).create_up_down_counter("db.client.connections.usage"),
    )


def context_from_env(env: Mapping[str, str] | None = None) -> context.Context | None:
    """The trace context a parent process handed down in ``TRACEPARENT``/``TRACESTATE``; None (the
    current context) when it handed none."""
    env = os.environ if env is None else env
    carrier = {v.lower(): env[v] for v in CONTEXT_VARIABLES if env.get(v)}
    return propagate.extract(carrier) if carrier else None


@contextmanager
def context_in_env(env: MutableMapping[str, str]) -> Iterator[None]:
    """``env`` carries the current span's context while the block runs (a child process started in
    it joins the trace), and is as it was afterwards."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    before = {v: env.get(v) for v in CONTEXT_VARIABLES}
    for v in CONTEXT_VARIABLES:
        env.pop(v, None)
        if carrier.get(v.lower()):
            env[v] = carrier[v.lower()]
    try:
        yield
    finally:
        for v, value in before.items():
            env.pop(v, None)
            if value is not None:
                env[v] = value


def opa_distributed_tracing(otlp_endpoint: str) -> dict[str, str]:
    """OPA's ``distributed_tracing`` configuration exporting to ``otlp_endpoint`` over OTLP/HTTP.
    OPA takes a host and port and posts to its default path, /v1/traces; it extracts the W3C
    traceparent of the requests it serves, so its decision spans join the caller's trace."""
    url = urlsplit(otlp_endpoint)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"OTLP endpoint {otlp_endpoint!r}: expected http(s)://host:port")
    if url.path.rstrip("/") not in ("", "/v1/traces"):
        raise ValueError(f"OTLP endpoint {otlp_endpoint!r}: OPA exports to /v1/traces only, not {url.path}")
    port = url.port or (443 if url.scheme == "https" else 4318)
    return {
        "type": "http",
        "address": f"{url.hostname}:{port}",
        "service_name": "opa",
        "encryption": "tls" if url.scheme == "https" else "off",
    }
