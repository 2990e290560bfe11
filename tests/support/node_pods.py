"""What the real-node suites run on a node: a busybox image built here (Debian's static busybox,
packed with umoci, no registry), pods under the `restricted` profile, and waits on their state."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import httpx

from greenops.local.node import SANDBOX_IMAGE, LocalNode
from greenops.local.node_platform import CONTAINER_SECURITY
from greenops.local.node_platform import NONROOT as NONROOT  # re-exported: the suites import them from here
from greenops.local.node_platform import create_restricted_namespace as create_namespace  # noqa: F401
from greenops.local.node_platform import wait_ready as wait_ready

BUSYBOX_IMAGE = "greenops.local/busybox:1"
# the applets a test pod runs (a server, a client over HTTP and HTTPS, a resolver)
APPLETS = ("sh", "cat", "echo", "httpd", "wget", "ssl_client", "nslookup", "sleep")
RESTRICTED = CONTAINER_SECURITY


def import_busybox(node: LocalNode, work: Path) -> str:
    """BUSYBOX_IMAGE in the node's containerd: /bin/busybox and a link per applet."""
    busybox = shutil.which("busybox")
    assert busybox, "busybox is not installed (make release-tools installs busybox-static)"
    layer = work / "busybox-layer.tar"
    with tarfile.open(layer, "w") as tar:
        tar.add(busybox, arcname="bin/busybox")
        for applet in APPLETS:
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
    layout = work / "busybox-layout"
    image = f"{layout}:1"
    for argv in (
        ["umoci", "init", "--layout", str(layout)],
        ["umoci", "new", "--image", image],
        ["umoci", "raw", "add-layer", "--image", image, str(layer)],
        ["umoci", "config", "--image", image, "--config.env=PATH=/bin", f"--config.user={NONROOT}:{NONROOT}"],
    ):
        subprocess.run(argv, check=True, capture_output=True)
    name, tag = BUSYBOX_IMAGE.rsplit(":", 1)
    node.import_layout(layout, tag, name)
    return BUSYBOX_IMAGE


def pause_pod(name: str, security: dict) -> dict:
    """A pod of the node's own sandbox image, with no token: the least a container can be."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "main", "image": SANDBOX_IMAGE, "imagePullPolicy": "Never", "securityContext": security}
            ],
        },
    }


def restricted_pod(name: str, command: list[str], **spec: object) -> dict:
    """A pod of one busybox container that passes the `restricted` profile."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": BUSYBOX_IMAGE,
                    "imagePullPolicy": "Never",
                    "command": command,
                    "securityContext": RESTRICTED,
                }
            ],
            **spec,
        },
    }


def wait_phase(k: httpx.Client, namespace: str, name: str, phases: set[str], timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    got: dict = {}
    while time.monotonic() < deadline:
        got = k.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
        if (got.get("status") or {}).get("phase") in phases:
            return got
        time.sleep(0.5)
    raise AssertionError(f"pod {namespace}/{name} never reached {phases}: {got.get('status')}")


def logs(k: httpx.Client, namespace: str, name: str) -> str:
    """The container's log, through the API server (which reaches the kubelet with its own certificate)."""
    r = k.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log")
    assert r.status_code == 200, r.text
    return r.text
