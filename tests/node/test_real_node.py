"""A real node on loopback (greenops/local/node.py): containerd, runc, the bridge CNI plugin and a
kubelet registered with its own client certificate. A pod bound to it in a namespace that enforces
the Pod Security `restricted` profile runs as the kubelet was asked, which the host checks on the
container's own process: UID 65532, a read-only root, no capability, no new privileges, seccomp
filtering. The API server judges the kubelet as a node (it may not touch another node's objects),
and once the node is stopped nothing of it is left on the machine: no process, mount, netns,
bridge or cgroup; nor when the run that started it was killed, once the next run starts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import NETNS, SANDBOX_IMAGE, LocalNode, missing, reap_stale
from tests.support.common import missing as unavailable

pytestmark = pytest.mark.integration

NONROOT = 65532
RESTRICTED = {
    "runAsNonRoot": True,
    "runAsUser": NONROOT,
    "runAsGroup": NONROOT,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@pytest.fixture(scope="module")
def cluster():
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    with LocalControlPlane(with_scheduler=True, with_controller_manager=True) as cp, LocalNode(cp) as node:
        yield cp, node


def pod(name: str, security: dict) -> dict:
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


def wait_ready(k: httpx.Client, namespace: str, name: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = k.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
        conditions = (got.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return got
        time.sleep(0.5)
    raise AssertionError(f"pod {namespace}/{name} not Ready: {got.get('status')}")


def status_of(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def test_a_restricted_pod_runs_on_the_node_as_the_kubelet_was_asked(cluster):
    cp, node = cluster
    ns = "tenant-a"
    with cp.client() as k:
        labels = {"pod-security.kubernetes.io/enforce": "restricted"}
        r = k.post("/api/v1/namespaces", json={"metadata": {"name": ns, "labels": labels}})
        assert r.status_code == 201, r.text
        # the profile is enforced: a pod that may run as root is refused
        loose = {k2: v for k2, v in RESTRICTED.items() if k2 not in ("runAsNonRoot", "runAsUser", "runAsGroup")}
        refused = k.post(f"/api/v1/namespaces/{ns}/pods", json=pod("loose", loose))
        assert refused.status_code == 403 and "restricted" in refused.text, refused.text
        # no nodeName: kube-scheduler binds it to the node
        assert k.post(f"/api/v1/namespaces/{ns}/pods", json=pod("worker", RESTRICTED)).status_code == 201
        ready = wait_ready(k, ns, "worker")
    assert ready["spec"]["nodeName"] == node.name
    ip = ready["status"]["podIP"]
    assert ip.startswith(node.pod_cidr.rsplit(".", 1)[0] + "."), (ip, node.pod_cidr)

    # the container's process, seen from the host: the pause binary started by our runc shim, as 65532
    mine = [p for p in node.leftover_processes() if Path(f"/proc/{p}/exe").resolve().name == "pause"]
    as_nonroot = [p for p in mine if status_of(p)["Uid"].split()[0] == str(NONROOT)]
    assert len(as_nonroot) == 1, {p: status_of(p)["Uid"] for p in mine}
    status = status_of(as_nonroot[0])
    assert status["Gid"].split()[0] == str(NONROOT)
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0  # every capability dropped
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"  # seccomp filtering (RuntimeDefault)
    root = next(
        line for line in Path(f"/proc/{as_nonroot[0]}/mountinfo").read_text().splitlines() if line.split()[4] == "/"
    )
    assert "ro" in root.split()[5].split(","), root  # its root filesystem is read-only


def test_the_kubelet_is_judged_as_its_node(cluster):
    cp, node = cluster
    cert = cp.authority.issue_client(f"system:node:{node.name}", ("system:nodes",), "as-node")
    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE  # the API server's serving cert is self-signed
    tls.load_cert_chain(cert.cert, cert.key)
    with httpx.Client(base_url=cp.server, verify=tls, timeout=15) as k:
        assert k.get(f"/api/v1/nodes/{node.name}").status_code == 200
        # NodeRestriction: a node may not label another node, nor create one in another's name
        other = {"metadata": {"name": "someone-else"}}
        assert k.post("/api/v1/nodes", json=other).status_code == 403
        # the Node authorizer: no secret of a pod that is not bound to it
        assert k.get("/api/v1/namespaces/default/secrets").status_code == 403


def test_a_stopped_node_leaves_nothing_on_the_machine():
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    before_netns = set(os.listdir(NETNS)) if NETNS.exists() else set()
    with LocalControlPlane() as cp:
        node = LocalNode(cp)
        with node:
            with cp.client() as k:
                body = pod("busy", RESTRICTED)
                body["spec"]["nodeName"] = node.name
                assert k.post("/api/v1/namespaces/default/pods", json=body).status_code == 201
                wait_ready(k, "default", "busy")
            assert node.leftover_processes() and node.leftover_mounts() and node.leftover_links()
        assert node.leftover_processes() == []
        assert node.leftover_mounts() == []
        assert node.leftover_links() == []
        assert node.leftover_cgroups() == []
        assert (set(os.listdir(NETNS)) if NETNS.exists() else set()) == before_netns
        assert not node.workdir.exists()


CHILD = """
import json, sys, time, httpx
from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import LocalNode
sys.path.insert(0, %(repo)r)
from tests.node.test_real_node import RESTRICTED, pod, wait_ready
cp = LocalControlPlane()
cp.start()
node = LocalNode(cp)
node.start()
with cp.client() as k:
    body = pod("busy", RESTRICTED)
    body["spec"]["nodeName"] = node.name
    k.post("/api/v1/namespaces/default/pods", json=body)
    wait_ready(k, "default", "busy")
print(json.dumps({"node": str(node.workdir), "cp": str(cp.workdir), "name": node.name}), flush=True)
time.sleep(600)
"""


def test_a_node_whose_run_was_killed_is_taken_down_by_the_next():
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    before_netns = set(os.listdir(NETNS)) if NETNS.exists() else set()
    repo = str(Path(__file__).resolve().parents[2])
    child = subprocess.Popen([sys.executable, "-c", CHILD % {"repo": repo}], stdout=subprocess.PIPE, cwd=repo)
    try:
        started = json.loads(child.stdout.readline())
    finally:
        child.kill()  # kill -9: no stop, no finally of its own
        child.wait()
    folder = Path(started["node"])
    stale = LocalNode.__new__(LocalNode)
    stale.name, stale.workdir = started["name"], folder
    stale.__post_init__()
    try:
        assert stale.leftover_processes() and stale.leftover_links(), "the killed run left its node running"
        assert reap_stale(folder.parent) == [folder]
        assert stale.leftover_processes() == [] and stale.leftover_mounts() == []
        assert stale.leftover_links() == [] and stale.leftover_cgroups() == [] and not folder.exists()
        assert (set(os.listdir(NETNS)) if NETNS.exists() else set()) == before_netns
    finally:
        for pid in [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]:  # its control plane
            try:
                if started["cp"].encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
        shutil.rmtree(started["cp"], ignore_errors=True)
