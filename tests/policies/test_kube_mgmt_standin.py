"""The kube-mgmt stand-in the real node's OPA pods run (greenops.local.kube_mgmt), against a real
API server and a real OPA on loopback: it takes kube-mgmt's flags, writes what they name where
kube-mgmt writes it, with the admin token, and follows changes."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.opa import OpaServer
from greenops.local.webhook import GROUP, VERSION, namespace_manifest, vmtemplate_crd
from tests.support.cluster_path import template
from tests.support.common import require_tool

pytestmark = [pytest.mark.tools, pytest.mark.integration]


def standin(*args: str) -> list[str]:
    return [sys.executable, "-m", "greenops.local.kube_mgmt", *args]


def data(opa: OpaServer, path: str) -> dict:
    r = httpx.get(f"{opa.url}/v1/data/kubernetes/{path}", headers=opa.admin_headers, timeout=10)
    r.raise_for_status()
    return r.json().get("result") or {}


def eventually(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (got := check()):
        assert time.monotonic() < deadline, "not replicated in time"
        time.sleep(0.2)
    return got


def test_it_replicates_namespaces_and_vmtemplates_where_kube_mgmt_does(opa_binary, tmp_path):
    for tool in ("etcd", "kube-apiserver"):
        require_tool(tool)
    token = tmp_path / "token"
    with LocalControlPlane() as cp, OpaServer(scheduler_url="http://127.0.0.1:9") as opa:
        token.write_text(opa.admin_token)
        cp.create_crd(vmtemplate_crd())
        with cp.client() as k:
            assert k.post("/api/v1/namespaces", json=namespace_manifest("team-a", "acme")).status_code == 201
        flags = [
            f"--kubeconfig={cp.write_kubeconfig()}",
            f"--opa-url={opa.url}/v1",
            f"--opa-auth-token-file={token}",
            "--enable-policies=false",
            "--enable-data=false",
            f"--replicate={GROUP}/{VERSION}/vmtemplates",
            "--replicate-cluster=v1/namespaces",
            "--resync=0.2",
        ]
        with subprocess.Popen(standin(*flags), stderr=subprocess.PIPE, text=True) as p:
            try:
                spaces = eventually(lambda: data(opa, "namespaces").get("team-a"))
                assert spaces["metadata"]["labels"]["greenops.io/tenant"] == "acme"
                assert "managedFields" not in spaces["metadata"]
                with cp.client() as k:
                    made = k.post(
                        f"/apis/{GROUP}/{VERSION}/namespaces/team-a/vmtemplates", json=template("etl", "acme")
                    )
                    assert made.status_code == 201, made.text
                    vm = eventually(lambda: data(opa, "vmtemplates").get("team-a", {}).get("etl"))
                    assert vm["spec"]["tenant"] == "acme"
                    # a deletion is followed too: what OPA holds is what the API server holds
                    assert k.delete(f"/apis/{GROUP}/{VERSION}/namespaces/team-a/vmtemplates/etl").status_code == 200
                eventually(lambda: "etl" not in data(opa, "vmtemplates").get("team-a", {}) or None)
            finally:
                p.kill()
        assert p.returncode != 0


def test_it_refuses_a_flag_kube_mgmt_would_take_but_it_does_not_do():
    for refused in (["--enable-policies=true"], ["--replicate=v1"], []):
        done = subprocess.run(standin("--opa-url=http://127.0.0.1:9/v1", *refused), capture_output=True, text=True)
        assert done.returncode == 2 and "kube-mgmt" in done.stderr and "Traceback" not in done.stderr, done.stderr
