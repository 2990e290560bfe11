"""Traces on loopback: the real scheduler (and the real OPA) export OTLP/HTTP to a real receiver
(tests.support.otlp), and a booking made through the project's own client joins the caller's trace."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry import trace
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import TracerProvider

from greenops.local.scheduler import SchedulerServer
from greenops.observability import spans, tracing
from greenops.placing.scheduler_client import Reservation, SchedulerClient
from tests.policies.test_opa_integration import WORKLOAD
from tests.support.otlp import OtlpReceiver, Span

pytestmark = pytest.mark.integration
QUICK_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "50"}  # milliseconds between the batches a process exports


def caller():
    """The test as a traced caller: its own SDK provider (not the process's global one)."""
    return TracerProvider().get_tracer("tests.observability")


def book(scheduler: SchedulerServer, token: str, key: str) -> dict:
    deadline = datetime.now(UTC) + timedelta(days=2)
    with SchedulerClient(scheduler.url, token=token) as client:
        return client.schedule(["FR", "DE", "SE-SE3"], deadline, 2, 2, 4, reservation=Reservation(key=key, tenant="ml"))


def no_secret(spans_: list[Span], bodies: list[bytes], *secrets: str) -> None:
    for s in spans_:
        for name, value in s.attributes.items():
            assert not any(t in str(value) for t in secrets), (s.name, name)
    for body in bodies:  # the whole export, resource and events included
        assert not any(t.encode() in body for t in secrets)


def test_a_booking_joins_the_callers_trace_down_to_the_database():
    with OtlpReceiver() as rx, SchedulerServer(env={"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, **QUICK_EXPORT}) as s:
        token = s.issue("ml-stack", ["ml"], paths=["pulumi"])
        with caller().start_as_current_span("caller") as parent:
            answer = book(s, token, "dev/train/1")
        ids = parent.get_span_context()
        trace_id, parent_id = format(ids.trace_id, "032x"), format(ids.span_id, "016x")

        def complete(got: list[Span]) -> bool:
            names = {x.name for x in got if x.trace_id == trace_id}
            return {"POST /scheduling", spans.SEARCH, spans.COMMIT} <= names and any(
                "db.system" in x.attributes or "db.system.name" in x.attributes for x in got if x.trace_id == trace_id
            )

        got = rx.wait_for(complete)
        ours = [x for x in got if x.trace_id == trace_id]
        assert {x.service for x in ours} == {"greenops-scheduler"}
        [server] = [x for x in ours if x.name == "POST /scheduling"]
        [search] = [x for x in ours if x.name == spans.SEARCH]
        [commit] = [x for x in ours if x.name == spans.COMMIT]
        assert server.kind == ProtoSpan.SPAN_KIND_SERVER and server.parent_id == parent_id
        assert search.parent_id == server.span_id and commit.parent_id == server.span_id
        assert search.attributes[spans.ZONES] == 3 and search.attributes[spans.ATTEMPT] == 0
        assert commit.attributes[spans.KEY] == "dev/train/1" and commit.attributes[spans.TENANT] == "ml"
        assert commit.attributes[spans.ZONE] == answer["scheduling_location"]
        database = [x for x in ours if "db.system" in x.attributes or "db.system.name" in x.attributes]
        in_commit = [x for x in database if x.parent_id == commit.span_id]
        assert in_commit, [(x.name, x.parent_id) for x in database]
        assert all(x.kind == ProtoSpan.SPAN_KIND_CLIENT for x in database)
        # every span of the trace hangs off the caller's, within the scheduler's own
        by_id = {x.span_id: x for x in ours}
        assert all(x.parent_id == parent_id or x.parent_id in by_id for x in ours)
        no_secret(got, rx.bodies, token, s.admin_token)


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_off_by_default(monkeypatch):
    """No endpoint: setup installs nothing (the API's no-op provider stays), the app and the record
    are not instrumented; a scheduler started so exports nothing, not even to the exporter's
    default endpoint (localhost:4318), where a receiver listens when the port is free."""
    for v in tracing.ENDPOINT_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    assert tracing.setup_tracing("greenops-test") is False and not tracing.enabled()
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)

    from greenops.intensity import ProfileSource
    from greenops.reservations import ReservationStore
    from greenops.scheduler.api import create_app

    store = ReservationStore("sqlite://")
    app = create_app(ProfileSource(), admin_tokens=["admin"], store=store)
    assert not [m for m in app.user_middleware if "OpenTelemetry" in m.cls.__name__]
    assert not store.engine.dispatch.before_cursor_execute  # the statements' listener

    default_port = 4318
    receiver = OtlpReceiver(port=default_port) if _free(default_port) else OtlpReceiver()
    env = {v: "" for v in tracing.ENDPOINT_VARIABLES} | QUICK_EXPORT
    with receiver as rx, SchedulerServer(env=env) as s:
        token = s.issue("ml-stack", ["ml"], paths=["pulumi"])
        with caller().start_as_current_span("caller"):
            book(s, token, "dev/train/1")
        s.stop()  # a provider installed by mistake would flush at exit
        assert rx.received() == [] and rx.bodies == []


def test_a_process_without_an_exporter_still_sends_the_callers_context_on():
    """The client in a process that exports nothing (this one) sends the caller's traceparent."""
    import httpx

    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("traceparent"))
        return httpx.Response(200, json={"scheduling_location": "FR", "scheduling_time": "2027-01-01T00:00:00Z"})

    with caller().start_as_current_span("caller") as parent:
        with SchedulerClient("http://scheduler.invalid", transport=httpx.MockTransport(answer)) as client:
            client.schedule(["FR"], datetime.now(UTC) + timedelta(days=1), 1, 1, 1)
    ids = parent.get_span_context()
    assert seen == [f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{int(ids.trace_flags):02x}"]


def test_opas_decision_joins_the_trace_of_the_request():
    """OPA's own distributed tracing (configured by OpaServer from the endpoint) extracts the
    traceparent the project's client sends: its decision span is a child of the caller's."""
    from greenops.local.opa import OpaServer
    from greenops.models import Workload
    from greenops.policies.client import OpaClient
    from tests.support.common import require_tool

    require_tool("opa")
    workload = Workload.model_validate(WORKLOAD)  # the OPA integration suite's workload
    with OtlpReceiver() as rx, OpaServer(otlp_endpoint=rx.endpoint) as opa:
        with caller().start_as_current_span("caller") as parent:
            with OpaClient(opa.url, token=opa.query_token) as client:
                assert client.decision(workload.spec())["allowed"]
        ids = parent.get_span_context()
        trace_id, parent_id = format(ids.trace_id, "032x"), format(ids.span_id, "016x")
        got = rx.wait_for(lambda g: any(x.trace_id == trace_id for x in g))
        ours = [x for x in got if x.trace_id == trace_id]
        assert {x.service for x in ours} == {"opa"}
        # OPA 1.22 wraps its API in two HTTP handlers, each with its own server span, both children of the caller's
        servers = [x for x in ours if x.kind == ProtoSpan.SPAN_KIND_SERVER]
        assert servers and all(x.parent_id == parent_id for x in servers)
        assert {x.attributes.get("url.path") for x in servers} == {"/v1/data/greenops/placement/decision"}
        by_id = {x.span_id: x for x in ours}
        assert all(x.parent_id == parent_id or x.parent_id in by_id for x in ours)
        no_secret(got, rx.bodies, opa.query_token, opa.admin_token)


def test_spans_are_exported_where_the_pulumi_sdk_holds_the_global_provider():
    """``import pulumi`` in a process started with TRACEPARENT installs the SDK's own global
    provider (no exporter): the dynamic provider's process during a traced pass. The platform's
    spans still reach the endpoint, children of that TRACEPARENT."""
    import os
    import subprocess
    import sys

    program = (
        "import pulumi\n"
        "from opentelemetry import trace\n"
        "from greenops.observability import tracing\n"
        "held = trace.get_tracer_provider()\n"
        "assert tracing.setup_tracing('greenops-test')\n"
        "assert trace.get_tracer_provider() is held\n"  # Pulumi's stays the global one
        "with tracing.tracer('t').start_as_current_span('work', context=tracing.context_from_env()):\n"
        "    pass\n"
        "tracing.flush()\n"
    )
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with OtlpReceiver() as rx:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, "TRACEPARENT": traceparent}
        env.pop("PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT", None)
        subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=120)
        [work] = rx.wait_for(lambda got: bool(got))
    assert (work.name, work.service) == ("work", "greenops-test")
    assert (work.trace_id, work.parent_id) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
