"""The vm-template chart, rendered by the real helm: guards, per-provider sets, and parity with the
Python renderers for the same decision."""
from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from greenops.catalog import select_size
from greenops.charts import stage_chart
from greenops.models import Decision
from greenops.renderers import RenderSettings, render
from tests.conftest import require_tool

pytestmark = pytest.mark.tools
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"
PAST = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def chart(tmp_path_factory):
    return stage_chart(tmp_path_factory.mktemp("chart"))


def helm_template(chart: Path, values: dict) -> list[dict]:
    helm = require_tool("helm")
    result = subprocess.run([helm, "template", "t", str(chart), "-f", "-"], input=json.dumps(values),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def values(**over) -> dict:
    v = {"vmName": "parity", "cpu": 4, "memory": 8, "duration": "2h", "deadline": "2030-01-01T00:00:00Z",
         "maxLatency": 2000, "originRegion": "westeurope", "tenant": "team-a", "sshPublicKey": KEY,
         "namespace": "greenops", "azureResourceGroup": "greenops-workloads"}
    v.update(over)
    return v


def canonical(objs: list[dict]) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True) for o in objs)


@pytest.mark.parametrize("provider,region", [
    ("azure", "swedencentral"), ("azure", "italynorth"), ("gcp", "europe-west9"), ("gcp", "us-central1"),
    ("aws", "eu-north-1"), ("aws", "us-east-1"),
])
@pytest.mark.parametrize("skip_await", [False, True])
def test_chart_matches_the_python_renderers(chart, catalog, make_workload, provider, region, skip_await):
    w = make_workload(name="parity", tenant="team-a", cpu=4, memory=8)
    size = select_size(catalog, provider, region, 4, 8).name
    d = Decision(provider=provider, region=region, zone=catalog.region(provider, region).zone,
                 scheduling_time=PAST, vm_size=size, image=catalog.image(provider, region))
    python = render(w, d, RenderSettings(ssh_public_key=KEY, skip_await=skip_await))
    helm = helm_template(chart, values(provider=provider, schedulingLocation=region, schedulingTime=PAST,
                                       vmSize=size, skipAwait=skip_await))
    assert canonical(helm) == canonical(python)


@pytest.mark.crds
def test_chart_output_validates_against_the_crds(chart, crd_schemas):
    for provider, region, size in [("azure", "francecentral", "Standard_F4s_v2"), ("gcp", "europe-west1", "e2-standard-4"),
                                   ("aws", "eu-west-3", "c6a.xlarge")]:
        objs = helm_template(chart, values(provider=provider, schedulingLocation=region, schedulingTime=PAST, vmSize=size))
        assert objs and [e for o in objs for e in crd_schemas.errors(o)] == []


def test_nothing_before_the_scheduling_time(chart):
    future = (datetime.now(timezone.utc) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert helm_template(chart, values(provider="gcp", schedulingLocation="europe-west9", schedulingTime=future,
                                       vmSize="e2-standard-4")) == []


def test_the_lead_time_opens_the_gate_early(chart):
    soon = (datetime.now(timezone.utc) + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = values(provider="gcp", schedulingLocation="europe-west9", schedulingTime=soon, vmSize="e2-standard-4")
    assert len(helm_template(chart, dict(base, provisioningLeadSeconds=300))) == 3
    assert helm_template(chart, dict(base, provisioningLeadSeconds=0)) == []


def test_nothing_without_a_decision(chart):
    assert helm_template(chart, values()) == []
    assert helm_template(chart, values(provider="aws", schedulingTime=PAST)) == []  # no region or size yet


@pytest.mark.parametrize("provider,kinds", [
    ("azure", {"VirtualNetwork", "VirtualNetworksSubnet", "NetworkInterface", "VirtualMachine"}),
    ("gcp", {"ComputeNetwork", "ComputeSubnetwork", "ComputeInstance"}),
    ("aws", {"VPC", "Subnet", "SecurityGroup", "Instance"}),
])
def test_each_provider_renders_only_its_own_set(chart, provider, kinds):
    region = {"azure": "westeurope", "gcp": "europe-west1", "aws": "eu-west-3"}[provider]
    objs = helm_template(chart, values(provider=provider, schedulingLocation=region, schedulingTime=PAST, vmSize="x"))
    assert {o["kind"] for o in objs} == kinds


def test_schema_rejects_bad_values(chart):
    with pytest.raises(RuntimeError, match="cpu"):
        helm_template(chart, values(cpu="four"))
    with pytest.raises(RuntimeError, match="provider"):
        helm_template(chart, values(provider="oracle"))


def test_clear_failures(chart):
    with pytest.raises(RuntimeError, match="no AMI is known for aws region ca-west-1"):
        helm_template(chart, values(provider="aws", schedulingLocation="ca-west-1", schedulingTime=PAST, vmSize="x"))
    with pytest.raises(RuntimeError, match="Azure Linux VMs need sshPublicKey"):
        helm_template(chart, values(provider="azure", schedulingLocation="westeurope", schedulingTime=PAST, vmSize="x",
                                    sshPublicKey=""))


def test_helm_lint(chart):
    result = subprocess.run([require_tool("helm"), "lint", str(chart)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
