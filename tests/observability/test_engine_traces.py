"""One reconcile pass is one trace across processes: the pass (this process) -> the Pulumi engine ->
Placement in the dynamic provider's own process -> OPA's decision and the scheduler's booking, each
process exporting to one OTLP/HTTP receiver on loopback. The engine boundary is crossed by
TRACEPARENT in the CLI's environment, which the engine hands to the provider process."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from greenops.engine.reconcile_stack import reconcile_once
from greenops.observability import spans
from tests.observability.test_traces import QUICK_EXPORT, caller, no_secret
from tests.support import loopback
from tests.support.engine import engine_stack, iso, render_mode_config, small_job
from tests.support.otlp import OtlpReceiver, Span

pytestmark = [pytest.mark.tools, pytest.mark.integration]


def test_a_pass_is_one_trace_across_the_engine(tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    workloads = [small_job("train", iso(now + timedelta(days=2)))]
    with OtlpReceiver() as rx:
        export = {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint, **QUICK_EXPORT}
        with loopback.servers(scheduler={"env": export}, opa={"otlp_endpoint": rx.endpoint}) as (scheduler, opa):
            secrets = loopback.stack_secrets(scheduler, opa, loopback.tenants_of(workloads))
            config = render_mode_config(opa.url, scheduler.url, tmp_path / "rendered", workloads=workloads)
            stack = engine_stack(tmp_path, "traced", now, config, secrets=secrets)
            stack.workspace.env_vars.update(export)  # the CLI's, hence the engine's and the provider's
            try:
                with caller().start_as_current_span("caller") as parent:
                    reconcile_once(stack)
                assert "TRACEPARENT" not in stack.workspace.env_vars  # handed to that operation only
                ids = parent.get_span_context()
                trace_id, parent_id = format(ids.trace_id, "032x"), format(ids.span_id, "016x")

                def complete(got: list[Span]) -> bool:
                    ours = {(x.service, x.name) for x in got if x.trace_id == trace_id}
                    return {
                        ("greenops-placement", spans.PROVIDER + "create"),
                        ("greenops-placement", spans.PLACE),
                        ("greenops-scheduler", "POST /scheduling"),
                        ("greenops-scheduler", spans.COMMIT),
                    } <= ours and any(service == "opa" for service, _ in ours)

                got = rx.wait_for(complete, timeout=30)
            finally:
                stack.destroy()
                stack.workspace.remove_stack("traced")
    ours = [x for x in got if x.trace_id == trace_id]
    by_id = {x.span_id: x for x in ours}
    [create] = [x for x in ours if x.name == spans.PROVIDER + "create"]
    [place] = [x for x in ours if x.name == spans.PLACE]
    # the pass and its pulumi operation ran here, where nothing exports: their context is the caller's
    assert create.parent_id == parent_id
    assert create.attributes == {spans.WORKLOAD: "train", spans.STACK: "traced"}
    assert place.parent_id == create.span_id
    assert place.attributes[spans.WORKLOAD] == "train" and place.attributes[spans.TENANT] == "ops"
    assert place.attributes[spans.KEY].startswith("traced/train/")

    def called_from_place(server: Span) -> bool:
        client = by_id[server.parent_id]
        return client.kind == ProtoSpan.SPAN_KIND_CLIENT and client.parent_id == place.span_id

    [booking] = [x for x in ours if x.name == "POST /scheduling"]
    assert called_from_place(booking)
    decisions = [x for x in ours if x.service == "opa" and x.kind == ProtoSpan.SPAN_KIND_SERVER]
    assert len({x.parent_id for x in decisions}) == 2  # the eligible set, then the zone's region
    assert all(called_from_place(x) for x in decisions)
    [commit] = [x for x in ours if x.name == spans.COMMIT]
    assert commit.parent_id == booking.span_id
    assert all(x.parent_id == parent_id or x.parent_id in by_id for x in ours)  # one tree
    no_secret(got, rx.bodies, *secrets.values(), opa.query_token, opa.admin_token, scheduler.admin_token)
