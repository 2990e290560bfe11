"""greenops:platform.otlpEndpoint: the platform's OPA exports its decision spans (its own
distributed_tracing configuration) and the scheduler its spans (the OTLP variable its SDK reads);
without it neither traces."""

from __future__ import annotations

import json

import pulumi
import pytest

from tests.components.test_platform_mocks import PROD, collect, of, opa_pod, run_platform

COLLECTOR = "http://otel-collector.monitoring:4318"


def opa_settings(m) -> dict:
    [config] = [r for r in of(m, "kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "opa-config"]
    return json.loads(config.inputs["data"]["config.json"])


def scheduler_env(m) -> dict:
    [deploy] = [r for r in of(m, "kubernetes:apps/v1:Deployment") if r.name == "scheduler-deploy"]
    [container] = deploy.inputs["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_an_endpoint_turns_on_opas_and_the_schedulers_traces():
    m = collect({**PROD, "otlpEndpoint": COLLECTOR})
    settings = opa_settings(m)
    assert settings["distributed_tracing"] == {
        "type": "http",
        "address": "otel-collector.monitoring:4318",
        "service_name": "opa",
        "encryption": "off",
    }
    assert settings["bundles"]["greenops"]["persist"] is True  # beside the bundle service's, unchanged
    assert opa_pod(m)["spec"]["containers"][0]["args"].count("--config-file=/config/config.json") == 1
    assert scheduler_env(m)["OTEL_EXPORTER_OTLP_ENDPOINT"] == COLLECTOR
    # without a bundle service OPA reads its configuration for tracing alone, beside --bundle
    bare = collect({**PROD, "otlpEndpoint": COLLECTOR, "policy": {"webhookTimeoutSeconds": 10}})
    assert set(opa_settings(bare)) == {"distributed_tracing"}
    args = opa_pod(bare)["spec"]["containers"][0]["args"]
    assert args[-2:] == ["--bundle", "/shipped/bundle.tar.gz"] and "--config-file=/config/config.json" in args


def test_no_endpoint_no_traces():
    m = collect(PROD)
    assert "distributed_tracing" not in opa_settings(m)
    assert not [name for name in scheduler_env(m) if name.startswith("OTEL_")]
    bare = collect({**PROD, "policy": {"webhookTimeoutSeconds": 10}})
    assert opa_settings(bare) == {}
    assert "--config-file=/config/config.json" not in opa_pod(bare)["spec"]["containers"][0]["args"]


def test_an_endpoint_opa_cannot_export_to_is_refused_by_key():
    run_platform({**PROD, "otlpEndpoint": "grpc://otel-collector.monitoring:4317"})
    from greenops.stack import program

    with pytest.raises(pulumi.RunError, match=r"greenops:platform\.otlpEndpoint: .*expected http\(s\)://host:port"):
        program.run()
