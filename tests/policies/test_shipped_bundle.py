"""The policy bundle the platform ships with its release, loaded by the real OPA as the
PolicyEngine component runs it: with --bundle, and from the persistence directory while the
bundle service cannot be reached (so OPA never serves an empty policy)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time

import httpx
import pytest

from components.platform_config import PolicyEngineConfig
from components.policy_engine import BUNDLE_NAME, opa_config
from greenops.local.controlplane import free_port
from greenops.local.opa import OpaServer
from greenops.policies import (
    ADMIN_TOKEN_VARIABLE,
    QUERY_TOKEN_VARIABLE,
    SERVES_VARIABLE,
    WEBHOOK_TOKEN_VARIABLE,
)
from greenops.policies.bundle import pack
from tests.policies.test_opa_integration import review, vmtemplate

pytestmark = pytest.mark.integration


def answers_admission(url: str, token: str) -> None:
    r = httpx.post(f"{url}/", json=review(obj=vmtemplate()), headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert r.status_code == 200 and r.json()["kind"] == "AdmissionReview", r.text


def test_the_shipped_bundle_loads_with_its_revision(opa_binary, tmp_path):
    raw, revision = pack()
    (tmp_path / "bundle.tar.gz").write_bytes(raw)
    with OpaServer(bundle=tmp_path / "bundle.tar.gz", serves="webhook") as opa:
        # system.* is no decision package: only kube-mgmt's admin token reads it
        assert httpx.get(f"{opa.url}/v1/data/system/bundles", headers=opa.query_headers).status_code == 401
        bundles = httpx.get(f"{opa.url}/v1/data/system/bundles", headers=opa.admin_headers).json()["result"]
        [manifest] = [b["manifest"] for b in bundles.values()]
        assert manifest == {"revision": revision, "roots": ["greenops", "system"]}
        answers_admission(opa.url, opa.webhook_token)


def test_opa_boots_from_the_persisted_bundle_while_the_service_is_unreachable(opa_binary, tmp_path):
    raw, revision = pack()
    # what the component's init container does: the shipped bundle into the persistence directory
    config = opa_config(PolicyEngineConfig(bundle_service_url=f"http://127.0.0.1:{free_port()}"))  # nobody listens
    persist = tmp_path / "persist"
    (persist / "bundles" / BUNDLE_NAME).mkdir(parents=True)
    (persist / "bundles" / BUNDLE_NAME / "bundle.tar.gz").write_bytes(raw)
    config["persistence_directory"] = str(persist)
    (tmp_path / "config.json").write_text(json.dumps(config))
    port = free_port()
    # as the component runs the webhook's OPA: token authentication, with the tokens from its Secrets
    admin, query, webhook = secrets.token_hex(24), secrets.token_hex(24), secrets.token_hex(24)
    proc = subprocess.Popen(
        [
            opa_binary,
            "run",
            "--server",
            "--addr",
            f"127.0.0.1:{port}",
            "--log-level",
            "error",
            "--authentication=token",
            "--authorization=basic",
            "--config-file",
            str(tmp_path / "config.json"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={
            **os.environ,
            ADMIN_TOKEN_VARIABLE: admin,
            QUERY_TOKEN_VARIABLE: query,
            WEBHOOK_TOKEN_VARIABLE: webhook,
            SERVES_VARIABLE: "webhook",
        },
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/health?bundles", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "OPA never became ready from its persisted bundle"
            time.sleep(0.2)
        assert httpx.get(f"{url}/v1/data/system/bundles").status_code == 401  # the bundle's authz holds
        bundles = httpx.get(f"{url}/v1/data/system/bundles", headers={"Authorization": f"Bearer {admin}"})
        assert bundles.json()["result"][BUNDLE_NAME]["manifest"]["revision"] == revision
        answers_admission(url, webhook)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
