"""Services on the real node: kube-proxy's rules take a ClusterIP to its pod, from the host and
from another pod; CoreDNS answers the cluster domain (the full name and the namespace's search
path), and a name it does not hold fails; a pod reaches the API server through the `kubernetes`
Service, and its projected ServiceAccount token authenticates it there as its ServiceAccount."""

from __future__ import annotations

import time

import httpx
import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import LocalNode, missing
from tests.support.common import missing as unavailable
from tests.support.node_pods import create_namespace, import_busybox, logs, restricted_pod, wait_phase, wait_ready

pytestmark = pytest.mark.integration
NS = "net"
PAGE = "served by web"
TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    with LocalControlPlane(with_node=True) as cp, LocalNode(cp) as node:
        import_busybox(node, tmp_path_factory.mktemp("busybox"))
        with cp.client() as k:
            create_namespace(k, NS)
        yield cp, node


@pytest.fixture(scope="module")
def web(cluster):
    """A pod serving PAGE on 8080 and its Service on port 80: the Service's ClusterIP."""
    cp, _ = cluster
    with cp.client() as k:
        site = {"metadata": {"name": "site"}, "data": {"index.html": PAGE + "\n"}}
        assert k.post(f"/api/v1/namespaces/{NS}/configmaps", json=site).status_code == 201
        body = restricted_pod(
            "web",
            ["httpd", "-f", "-p", "8080", "-h", "/www"],
            volumes=[{"name": "site", "configMap": {"name": "site"}}],
        )
        container = body["spec"]["containers"][0]
        container["volumeMounts"] = [{"name": "site", "mountPath": "/www"}]
        container["readinessProbe"] = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}
        assert k.post(f"/api/v1/namespaces/{NS}/pods", json=body).status_code == 201
        service = {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        }
        created = k.post(f"/api/v1/namespaces/{NS}/services", json=service)
        assert created.status_code == 201, created.text
        wait_ready(k, NS, "web")
    return created.json()["spec"]["clusterIP"]


def run_to_end(k: httpx.Client, name: str, script: str) -> tuple[str, str]:
    """A pod running ``script`` once: its final phase and its log."""
    body = restricted_pod(name, ["sh", "-c", script], restartPolicy="Never")
    assert k.post(f"/api/v1/namespaces/{NS}/pods", json=body).status_code == 201
    done = wait_phase(k, NS, name, {"Succeeded", "Failed"})
    return done["status"]["phase"], logs(k, NS, name)


def test_the_host_reaches_a_pod_through_its_cluster_ip(web):
    # Until kube-proxy has synced the Service's rules (after its EndpointSlice), the address is
    # nobody's here and the request leaves by the default route, where this machine's network
    # answers it (a 404 with no body): so only the page itself ends the wait.
    deadline, answer = time.monotonic() + 30, "no answer"
    while time.monotonic() < deadline:
        try:
            got = httpx.get(f"http://{web}/", timeout=2)
            answer = f"{got.status_code} {got.text[:200]!r}"
            if got.status_code == 200 and PAGE in got.text:
                return
        except httpx.TransportError as e:
            answer = repr(e)
        time.sleep(0.5)
    pytest.fail(f"{web}: the page was not served through the ClusterIP in 30s; last: {answer}")


def test_a_pod_reaches_a_service_by_its_names_and_not_a_name_nobody_serves(cluster, web):
    cp, _ = cluster
    with cp.client() as k:
        phase, out = run_to_end(
            k, "client", f"wget -q -O- http://web/ && wget -q -O- http://web.{NS}.svc.cluster.local/"
        )
        assert phase == "Succeeded", out
        assert out.count(PAGE) == 2, out
        phase, out = run_to_end(k, "lost", f"wget -q -T 5 -O- http://nobody.{NS}.svc.cluster.local/")
        assert phase == "Failed", out
        assert PAGE not in out


def test_a_pod_is_its_service_account_at_the_api_server(cluster):
    """busybox's TLS cannot talk to the API server's (P-256 certificates, Go's suites), so the pod
    shows the two halves: the API server answers it through the `kubernetes` Service (plain HTTP
    to a TLS port gets Go's own refusal), and the token the kubelet projected into it, presented
    here, authenticates as its ServiceAccount, bound to that pod on this node."""
    cp, node = cluster
    script = f"cat {TOKEN}; echo; wget -q -O- http://kubernetes.default.svc:443/ 2>&1; true"
    with cp.client() as k:
        phase, out = run_to_end(k, "whoami", script)
        assert phase == "Succeeded", out
        token, answer = out.split("\n", 1)
        assert "HTTP request to an HTTPS server" in answer or "400" in answer, answer
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        with httpx.Client(base_url=cp.server, verify=False, headers={"Authorization": f"Bearer {token}"}) as pod:
            r = pod.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json=review)
        assert r.status_code == 201, r.text
        user = r.json()["status"]["userInfo"]
        assert user["username"] == f"system:serviceaccount:{NS}:default"
        assert user["extra"]["authentication.kubernetes.io/pod-name"] == ["whoami"]
        assert user["extra"]["authentication.kubernetes.io/node-name"] == [node.name]
        # the token dies with its pod: the API server checks the binding (from its informer's
        # cache, so within seconds), not only the signature
        assert k.delete(f"/api/v1/namespaces/{NS}/pods/whoami", params={"gracePeriodSeconds": 0}).status_code == 200
        deadline, status = time.monotonic() + 30, None
        with httpx.Client(base_url=cp.server, verify=False, headers={"Authorization": f"Bearer {token}"}) as pod:
            while time.monotonic() < deadline:
                status = pod.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json=review).status_code
                if status == 401:
                    break
                time.sleep(0.5)
        assert status == 401, "a deleted pod's token still authenticates"
