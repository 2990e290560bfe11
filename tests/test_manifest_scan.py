"""The manifest scanner (checkov, pinned in tools/checkov/requirements.txt) over every Kubernetes
object the prod stack declares (tests/support/declared.py: the program under mocks with its own stack file)
and over what the vm-template chart renders for each provider (the real helm): any finding fails,
and so does a suppression without a reason.

A finding that stays is suppressed on its object with ``checkov.io/skipN: CKV_K8S_xx=<reason>``
(components/hardening.scanner_skips), so the reason travels with the manifest. Skipped where checkov
is not installed (``make scanner``; ``make test`` and CI always install it).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.common import missing
from tests.support.declared import evaluate_stack

pytestmark = pytest.mark.tools

CHART_DECISIONS = [  # one scheduled placement per provider, as test_vm_template_chart.py renders them
    ("azure", "francecentral", "Standard_F4s_v2"),
    ("gcp", "europe-west1", "e2-standard-4"),
    ("aws", "eu-west-3", "c6a.xlarge"),
]


def checkov() -> str:
    from greenops.common.toolpaths import ToolMissing, checkov_path

    try:
        return checkov_path()
    except ToolMissing as exc:
        missing(str(exc))


def as_sent(value):
    """Numbers as the Kubernetes provider sends them: Pulumi's mocks hand every number back as a
    float (8080.0), which the scanner would not read as the port or UID it is."""
    if isinstance(value, dict):
        return {k: as_sent(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_sent(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def write(directory: Path, objects: list[dict], prefix: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, obj in enumerate(objects):
        meta = obj["metadata"]
        name = f"{prefix}-{i:03d}-{obj['kind']}-{meta.get('namespace', '')}-{meta['name']}.yaml".replace(":", "-")
        (directory / name).write_text(yaml.safe_dump(as_sent(obj), sort_keys=False))


def scan(directory: Path) -> dict:
    result = subprocess.run(
        # --skip-download: no Prisma Cloud look-ups (guidelines, policy metadata); nothing leaves the machine
        [checkov(), "-d", str(directory), "--framework", "kubernetes", "--skip-download", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.stdout.strip(), f"checkov printed no report (exit {result.returncode}): {result.stderr[-2000:]}"
    report = json.loads(result.stdout)
    if isinstance(report, dict) and "check_type" not in report and "passed" in report:
        # no check applied to any object (only custom resources): checkov prints its summary alone
        return {"summary": report, "results": {"passed_checks": [], "failed_checks": [], "skipped_checks": []}}
    assert isinstance(report, dict) and report.get("check_type") == "kubernetes", report
    return report


def findings(report: dict) -> list[str]:
    return [f"{c['check_id']} {c['resource']}: {c['check_name']}" for c in report["results"]["failed_checks"]]


def unexplained(report: dict) -> list[str]:
    """Suppressions without a reason (checkov records "No comment provided" for a bare check id)."""
    out = []
    for c in report["results"]["skipped_checks"]:
        reason = (c.get("check_result") or {}).get("suppress_comment") or ""
        if not reason.strip() or reason == "No comment provided":
            out.append(f"{c['check_id']} {c['resource']}")
    return out


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    declared = evaluate_stack("prod")
    directory = tmp_path_factory.mktemp("scan") / "platform"
    write(directory, declared.objects, "prod")
    return declared, scan(directory)


@pytest.fixture(scope="module")
def chart(tmp_path_factory):
    from greenops.charts import stage_chart
    from tests.charts.test_vm_template_chart import helm_template, started, values

    staged = stage_chart(tmp_path_factory.mktemp("chart"))
    directory = tmp_path_factory.mktemp("scan") / "chart"
    rendered = []
    for provider, region, size in CHART_DECISIONS:
        objs = helm_template(
            staged, values(provider=provider, schedulingLocation=region, schedulingTime=started(), vmSize=size)
        )
        assert objs, provider
        rendered += objs
        write(directory, objs, provider)
    return rendered, scan(directory)


def test_the_platforms_objects_have_no_finding(platform):
    declared, report = platform
    assert report["summary"]["resource_count"] >= len(declared.objects) > 0  # every object was read
    assert report["summary"]["parsing_errors"] == 0
    assert findings(report) == []
    assert unexplained(report) == []


def test_what_stays_suppressed_is_named_with_its_reason(platform):
    _, report = platform
    skipped = {(c["check_id"], c["resource"]) for c in report["results"]["skipped_checks"]}
    # OPA keeps its tokens in its environment (Rego reads opa.runtime().env) and its pod's token (kube-mgmt);
    # the scheduler keeps the database URL (no file option) and its pod's token (it reviews the
    # controller's); the controller keeps its pod's token (it calls the API server) and serves no probe;
    # every image is pinned by tag
    assert skipped == {
        ("CKV_K8S_35", "Deployment.opa.opa"),
        ("CKV_K8S_38", "Deployment.opa.opa"),
        ("CKV_K8S_8", "Deployment.opa.opa"),
        ("CKV_K8S_9", "Deployment.opa.opa"),
        # kube-mgmt is upstream's, pinned by tag; our images (OPA's, the scheduler's, the
        # controller's) are pinned by the digest `make release` built, so the check runs on them
        ("CKV_K8S_43", "Deployment.opa.opa"),
        ("CKV_K8S_35", "Deployment.greenops.greenops-scheduler"),
        ("CKV_K8S_38", "Deployment.greenops.greenops-scheduler"),
        ("CKV_K8S_38", "Deployment.greenops.greenops-controller"),
        ("CKV_K8S_8", "Deployment.greenops.greenops-controller"),
        ("CKV_K8S_9", "Deployment.greenops.greenops-controller"),
    }


def test_the_vm_template_charts_objects_have_no_finding(chart):
    rendered, report = chart
    assert {o["apiVersion"].split("/")[0] for o in rendered} >= {
        "network.azure.com",
        "compute.cnrm.cloud.google.com",
        "ec2.services.k8s.aws",
    }
    # the chart renders cloud resources only (ASO, Config Connector, ACK): no pod for a check to apply to,
    # and nothing the scanner could not read
    assert report["summary"]["parsing_errors"] == 0
    assert findings(report) == []
    assert unexplained(report) == []


def test_the_scan_finds_what_it_must(tmp_path):
    """A pod as the audit found OPA's (no security context, no limits, a tag, a secret variable)
    fails the scan; the same pod with a bare suppression is reported as unexplained."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bare", "namespace": "t"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "docker.io/library/busybox:1.37.0",
                    "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}],
                }
            ]
        },
    }
    write(tmp_path / "bare", [pod], "t")
    failed = {f.split()[0] for f in findings(scan(tmp_path / "bare"))}
    assert {"CKV_K8S_20", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_35", "CKV_K8S_43", "CKV_K8S_13"} <= failed
    pod["metadata"]["annotations"] = {"checkov.io/skip1": "CKV_K8S_35"}
    write(tmp_path / "bare-skip", [pod], "t")
    assert unexplained(scan(tmp_path / "bare-skip")) == ["CKV_K8S_35 Pod.t.bare"]
