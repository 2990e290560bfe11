"""A real OTLP/HTTP trace receiver on loopback: POST /v1/traces, the protobuf body decoded by the
OpenTelemetry proto definitions (ExportTraceServiceRequest), as a collector would receive it."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class Span:
    name: str
    service: str
    trace_id: str  # 32 hex digits, as in a traceparent
    span_id: str
    parent_id: str  # "" for a root
    kind: int  # opentelemetry.proto.trace.v1.Span.SpanKind
    attributes: dict[str, Any] = field(default_factory=dict)


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


def decode(body: bytes) -> list[Span]:
    request = ExportTraceServiceRequest.FromString(body)
    out = []
    for rs in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    Span(
                        name=s.name,
                        service=str(resource.get("service.name", "")),
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_id=s.parent_span_id.hex(),
                        kind=s.kind,
                        attributes={kv.key: _value(kv.value) for kv in s.attributes},
                    )
                )
    return out


class OtlpReceiver:
    """``with OtlpReceiver() as rx``: ``rx.endpoint`` is OTEL_EXPORTER_OTLP_ENDPOINT's value;
    ``rx.spans`` what was received; ``rx.bodies`` every raw request body."""

    def __init__(self, port: int = 0) -> None:
        self.spans: list[Span] = []
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or "protobuf" not in (self.headers.get("Content-Type") or ""):
                    self.send_response(404)
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver._lock:
                    receiver.bodies.append(body)
                    receiver.spans.extend(spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> list[Span]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, done: Callable[[list[Span]], bool], timeout: float = 20.0) -> list[Span]:
        """The spans once ``done`` holds of them; AssertionError with what arrived if it never does."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.received()
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"spans received: {[(s.service, s.name) for s in spans]}")
            time.sleep(0.1)
