"""The platform's own pods on the real node. The greenops and PostgreSQL images built here
(release.steps) are pushed to a registry on loopback and pulled by the kubelet by digest; `pulumi up`
installs the scheduler as the prod stack declares it (two replicas, a read-only root, UID 65532
reading its mounted Secrets, probes, a namespace that enforces `restricted`) on a PostgreSQL pod
behind a Service; and a scheduler pod deleted mid-burst loses and doubles no booking.

What the platform deploys for its record in production (the Bitnami chart's images) cannot be had
here: PostgreSQL runs from Debian's server in an image built here, and the scheduler is pointed at it
as at an existing server (greenops:schedulerDatabaseUrl)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.endpoints import SCHEDULER_PORT, SCHEDULER_SERVICE
from greenops.local import node_platform
from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import LocalNode, missing
from release import images, registry
from release.spec import source
from tests.support.burst import CAPACITY, Issuer, assert_record_matches, burst, issue_tokens, request, retry_each
from tests.support.common import missing as unavailable
from tests.support.node_pods import (
    create_namespace,
    import_busybox,
    logs,
    restricted_pod,
    wait_phase,
)

# the first test's set-up may be the session's release build (every image; tests/release shares it)
pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(1800)]
SCHED_NS = node_platform.SCHEDULER_NS
TENANT_NS = "tenant-a"
TOKEN_DIR = "/var/run/secrets/greenops"


@pytest.fixture(scope="module")
def pushed(built, local_registry, tmp_path_factory):
    """name -> the image by digest in the loopback registry: greenops from the session's release
    build, PostgreSQL built here (the release builds it only on request)."""
    out, manifest = built
    entries = dict(manifest["images"])
    if "postgresql" not in entries:
        made = images.build_postgresql(tmp_path_factory.mktemp("postgresql"), source())
        entries["postgresql"] = {"layout": str(made.layout), "tag": made.spec.tag, "digest": made.digest}
    refs = {}
    for name in ("greenops", "postgresql"):
        entry = entries[name]
        registry.push(f"{entry['layout']}:{entry['tag']}", f"{local_registry}/{name}:{entry['tag']}")
        refs[name] = f"{local_registry}/{name}@{entry['digest']}"
    return refs


@pytest.fixture(scope="module")
def cluster(pushed, local_registry, tmp_path_factory):
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    with LocalControlPlane(with_node=True) as cp, LocalNode(cp) as node:
        node.trust_registry(local_registry)
        import_busybox(node, tmp_path_factory.mktemp("busybox"))
        yield cp, node


@pytest.fixture(scope="module")
def database(cluster, pushed):
    """The PostgreSQL pod and its Service: the scheduler pods' URL and the host's."""
    return node_platform.start_postgresql(cluster[0], pushed["postgresql"])


@pytest.fixture(scope="module")
def platform(cluster, pushed, database, tmp_path_factory):
    """`pulumi up` of a stack that installs the scheduler (the rest of the platform off: its images
    cannot be had here): the scheduler's URL through its Service and its bootstrap admin's token."""
    # a tenant's CI pod, proven by its projected token (TokenReview), not by what it says
    ci = {"serviceAccount": f"{TENANT_NS}/ci", "role": "write", "tenants": ["tenant-a"], "paths": ["pulumi"]}
    config = node_platform.stack_config(pushed["greenops"], CAPACITY, [ci])
    installed = node_platform.install(cluster[0], tmp_path_factory.mktemp("platform"), config, database)
    print(f"\npulumi up on the node: {installed.seconds:.0f}s")
    return installed.url, installed.admin_token


def scheduler_pods(k: httpx.Client) -> list[dict]:
    selector = "app.kubernetes.io/name=greenops-scheduler"
    return k.get(f"/api/v1/namespaces/{SCHED_NS}/pods", params={"labelSelector": selector}).json()["items"]


def test_the_scheduler_pods_run_restricted_from_the_digest_pushed(cluster, pushed, platform):
    cp, _ = cluster
    with cp.client() as k:
        ns = k.get(f"/api/v1/namespaces/{SCHED_NS}").json()
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        pods = scheduler_pods(k)
        assert len(pods) == 2
        for pod in pods:
            assert all(c["type"] != "Ready" or c["status"] == "True" for c in pod["status"]["conditions"]), pod
            (status,) = pod["status"]["containerStatuses"]
            # the kubelet ran what was pushed: the image's own digest, pulled from the registry
            assert status["imageID"].endswith(pushed["greenops"].split("@")[1]), status
            assert status["ready"] and status["restartCount"] == 0, status
        # a pod that is not `restricted` is refused in that namespace, whoever asks
        rogue = {"metadata": {"name": "rogue"}, "spec": {"containers": [{"name": "c", "image": pushed["greenops"]}]}}
        refused = k.post(f"/api/v1/namespaces/{SCHED_NS}/pods", json=rogue)
        assert refused.status_code == 403 and "restricted" in refused.text, refused.text


def test_a_scheduler_pod_deleted_mid_burst_loses_and_doubles_nothing(cluster, database, platform):
    cp, _ = cluster
    url, admin = platform
    tokens = issue_tokens(Issuer(url, admin))
    # the record's clock is the real one: the calendar is the next 12 h
    deadline = (datetime.now(UTC) + timedelta(hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def make(i: int) -> dict:
        return request(i, deadline)

    answered: list[int] = []
    with cp.client() as k, ThreadPoolExecutor(1) as runner:
        pending = runner.submit(burst, [url], 300, 16, tokens, answered, make)
        while len(answered) < 100:
            assert not pending.done(), "the burst finished before the deletion"
            time.sleep(0.01)
        victim = scheduler_pods(k)[0]["metadata"]["name"]
        gone = k.delete(f"/api/v1/namespaces/{SCHED_NS}/pods/{victim}", params={"gracePeriodSeconds": 0})
        assert gone.status_code == 200, gone.text
        deleted_at = len(answered)
        got = pending.result()
    placed = sum(r[-1].status_code == 200 for r in got.values())
    print(f"\n{victim} deleted after {deleted_at} of 300 answers; {placed} placed, {300 - placed} refused")
    assert len(got) == 300
    assert_record_matches(database.from_host, got)
    retry_each([url], got, tokens, make)
    assert_record_matches(database.from_host, got)


def asking_pod(name: str, audience: str | None, body: dict) -> dict:
    """A pod of TENANT_NS/ci that posts ``body`` to the scheduler's Service with a token projected
    for ``audience`` (None: the API server's own, the ServiceAccount's default token)."""
    url = f"http://{SCHEDULER_SERVICE}.{SCHED_NS}.svc:{SCHEDULER_PORT}/scheduling"
    token = f"{TOKEN_DIR}/token" if audience else "/var/run/secrets/kubernetes.io/serviceaccount/token"
    # busybox's wget prints the status line of a refusal on stderr, and exits 1
    script = (
        f'wget -S -O- --header "Authorization: Bearer $(cat {token})" '
        f"--header 'Content-Type: application/json' --post-data '{json.dumps(body)}' {url} 2>&1; true"
    )
    pod = restricted_pod(name, ["sh", "-c", script], restartPolicy="Never", serviceAccountName="ci")
    if audience:
        projected = {"serviceAccountToken": {"audience": audience, "expirationSeconds": 600, "path": "token"}}
        pod["spec"]["volumes"] = [{"name": "token", "projected": {"sources": [projected]}}]
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "token", "mountPath": TOKEN_DIR, "readOnly": True}]
    return pod


def test_the_scheduler_pods_accept_a_pods_projected_token_through_token_review(cluster, platform):
    cp, _ = cluster
    # beyond the burst's 12 h (which fills its calendar): room whatever ran before
    deadline = (datetime.now(UTC) + timedelta(hours=36)).strftime("%Y-%m-%dT%H:%M:%SZ")
    mine = {**request(0, deadline), "key": "ci/etl", "tenant": "tenant-a", "path": "pulumi"}
    theirs = {**mine, "key": "ci/theirs", "tenant": "tenant-b"}
    with cp.client() as k:
        create_namespace(k, TENANT_NS)
        account = {"metadata": {"name": "ci"}}
        assert k.post(f"/api/v1/namespaces/{TENANT_NS}/serviceaccounts", json=account).status_code == 201
        answers = {}
        for name, audience, body in (
            ("booked", "greenops-scheduler", mine),
            ("not-its-tenant", "greenops-scheduler", theirs),
            ("wrong-audience", None, mine),
        ):
            made = k.post(f"/api/v1/namespaces/{TENANT_NS}/pods", json=asking_pod(name, audience, body))
            assert made.status_code == 201, made.text
            wait_phase(k, TENANT_NS, name, {"Succeeded", "Failed"})
            answers[name] = logs(k, TENANT_NS, name)
    assert "200 OK" in answers["booked"] and '"placements"' in answers["booked"], answers["booked"]
    assert "403" in answers["not-its-tenant"], answers["not-its-tenant"]
    assert "401" in answers["wrong-audience"], answers["wrong-audience"]
