"""A real node on loopback (greenops/local/node.py): containerd, runc, the bridge CNI plugin and a
kubelet registered with its own client certificate. A pod bound to it in a namespace that enforces
the Pod Security `restricted` profile runs as the kubelet was asked, which the host checks on the
container's own process: UID 65532, a read-only root, no capability, no new privileges, seccomp
filtering. The API server judges the kubelet as a node (it may not touch another node's objects),
and once the node is stopped nothing of it is left on the machine: no process, mount, netns,
bridge or cgroup (tests/node/test_teardown.py)."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import LocalNode, missing
from tests.support.common import missing as unavailable
from tests.support.node_pods import NONROOT, RESTRICTED, create_namespace, wait_ready
from tests.support.node_pods import pause_pod as pod

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster():
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    with LocalControlPlane(with_node=True) as cp, LocalNode(cp) as node:
        yield cp, node


def status_of(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def test_a_restricted_pod_runs_on_the_node_as_the_kubelet_was_asked(cluster):
    cp, node = cluster
    ns = "tenant-a"
    with cp.client() as k:
        create_namespace(k, ns)
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
