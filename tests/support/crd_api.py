"""A real kube-apiserver (and its etcd) with the VmTemplate CRD installed and no webhook in front:
for the tests that ask what the API server itself takes and refuses."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from greenops.local.controlplane import LocalControlPlane
from greenops.local.webhook import vmtemplate_crd
from tests.support.common import require_tool


@contextlib.contextmanager
def api_server_with_crd(namespace: str) -> Iterator[LocalControlPlane]:
    """``with api_server_with_crd(ns) as cp``: etcd and kube-apiserver on loopback, the VmTemplate
    CRD created and the namespace ``ns`` made."""
    for tool in ("etcd", "kube-apiserver"):
        require_tool(tool)
    with LocalControlPlane() as cp:
        cp.create_crd(vmtemplate_crd())
        with cp.client() as k:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            made = k.post("/api/v1/namespaces", json=body)
            assert made.status_code == 201, made.text
        yield cp
