"""OPA's admission path against the real scheduler service: placed, then failing closed, then back."""
from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from greenops.local.controlplane import free_port
from greenops.local.scheduler import SchedulerServer
from greenops.policies.server import OpaServer

pytestmark = pytest.mark.integration


def review(deadline: str) -> dict:
    spec = {"vmName": "train", "cpu": 4, "memory": 8, "duration": "2h", "deadline": deadline,
            "maxLatency": 100, "originRegion": "westeurope", "dataResidency": "eu", "tenant": "ml"}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-1", "kind": {"group": "composition.krateo.io", "version": "v1", "kind": "VmTemplate"},
        "operation": "CREATE", "object": {"metadata": {"name": "train", "namespace": "ml"}, "spec": spec}}}


def test_place_fail_closed_and_recover(opa_binary, catalog):
    port = free_port()
    deadline = (datetime.now(timezone.utc) + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with OpaServer(scheduler_url=f"http://127.0.0.1:{port}") as opa:
        with SchedulerServer(port=port):
            answer = httpx.post(f"{opa.url}/", json=review(deadline), timeout=20).json()["response"]
            assert answer["allowed"], answer
            patch = {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}
            region = catalog.region(patch["/spec/provider"], patch["/spec/schedulingLocation"])
            assert region.eu
            start = datetime.fromisoformat(patch["/spec/schedulingTime"].replace("Z", "+00:00"))
            assert start + timedelta(hours=2) <= datetime.fromisoformat(deadline.replace("Z", "+00:00"))
        down = httpx.post(f"{opa.url}/", json=review(deadline), timeout=20).json()["response"]
        assert down["allowed"] is False and "failing closed" in down["status"]["message"]
        assert "unreachable" in down["status"]["message"]
        with SchedulerServer(port=port):
            assert httpx.post(f"{opa.url}/", json=review(deadline), timeout=20).json()["response"]["allowed"]
