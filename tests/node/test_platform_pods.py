"""The platform's own pods on the real node. The greenops and OPA images of the release build, a
PostgreSQL image and the kube-mgmt stand-in built here (release.steps) are pushed to a registry on
loopback and pulled by the kubelet by digest; `pulumi up` installs, as the prod stack declares them,
the scheduler (two replicas, a read-only root, UID 65532 reading its mounted Secrets, probes, a
namespace that enforces `restricted`) on a PostgreSQL pod behind a Service, OPA (two pods: its two
processes and the sidecar) with the webhook by its Service, and the controller (two replicas, one
leading). A scheduler pod deleted mid-burst loses and doubles no booking; a tenant's VmTemplate is
admitted by the OPA pod and confirmed by a controller pod; the leader's pod deleted, the other leads;
a real Prometheus scrapes every pod the stack's monitors select.

What the platform deploys for its record in production (the Bitnami chart's images) cannot be had
here: PostgreSQL runs from Debian's server in an image built here, and the scheduler is pointed at it
as at an existing server (greenops:schedulerDatabaseUrl). Nor can kube-mgmt or the pulumi-tls plugin:
see docs/operations/install.md, "Installed on a real node here"."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from greenops.common.clock import parse_time, stamp
from greenops.common.endpoints import SCHEDULER_PORT, SCHEDULER_SERVICE
from greenops.common.httpclient import RetryingClient
from greenops.insight.record_rows import listed
from greenops.local import node_platform
from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import LocalNode, missing
from greenops.local.webhook import GROUP, VERSION, vmtemplate_crd
from greenops.observability import alerts
from greenops.policies.webhook import TENANT_LABEL
from greenops.validation.crd import default_crd_dir
from release import images, registry
from release.oci import Built
from release.spec import GREENOPS, source
from tests.support.burst import CAPACITY, Issuer, assert_record_matches, burst, issue_tokens, request, retry_each
from tests.support.cluster_path import template
from tests.support.common import missing as unavailable
from tests.support.krateo import ASO_VM, KrateoStandIn, aso_vm_of
from tests.support.monitors import API as MONITORING_API
from tests.support.monitors import scrape_jobs
from tests.support.node_pods import (
    create_namespace,
    import_busybox,
    logs,
    restricted_pod,
    wait_phase,
)
from tests.support.prometheus import PrometheusServer, by_label
from tests.support.upstream_crds import local_crd

# the first test's set-up may be the session's release build (every image; tests/release shares it)
pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(1800)]
SCHED_NS = node_platform.SCHEDULER_NS
TENANT_NS = "tenant-a"
TENANTS = (TENANT_NS, "tenant-b")
TOKEN_DIR = "/var/run/secrets/greenops"
# the Prometheus Operator's CRDs (../shared/crds): with them the stack installs its monitoring too
MONITOR_CRDS = [
    default_crd_dir() / f"monitoring.coreos.com_{p}.yaml" for p in ("servicemonitors", "podmonitors", "prometheusrules")
]
MONITORED = all(f.is_file() for f in MONITOR_CRDS)
ALL_UP = {alerts.SCHEDULER: 2.0, alerts.OPA: 2.0, alerts.CONTROLLER: 2.0}  # two pods of each, every one scraped


@pytest.fixture(scope="module")
def pushed(built, local_registry, tmp_path_factory):
    """name -> the image by digest in the loopback registry: greenops and OPA from the session's
    release build; PostgreSQL and the kube-mgmt stand-in built here (the release builds them only on
    request; the stand-in is the greenops image's layers under another entrypoint)."""
    out, manifest = built
    entries = dict(manifest["images"])
    made: list[Built] = []
    if "postgresql" not in entries:
        made.append(images.build_postgresql(tmp_path_factory.mktemp("postgresql"), source()))
    if "kube-mgmt-standin" not in entries:
        greenops = entries["greenops"]
        base = Built(GREENOPS, Path(greenops["layout"]), greenops["digest"])
        made.append(images.build_kube_mgmt_standin(tmp_path_factory.mktemp("kube-mgmt"), base, source()))
    for image in made:
        entries[image.spec.name] = {"layout": str(image.layout), "tag": image.spec.tag, "digest": image.digest}
    names = ("greenops", "opa", "postgresql", "kube-mgmt-standin")
    return {name: registry.push_pinned(entries[name], local_registry, name) for name in names}


@pytest.fixture(scope="module")
def keys():
    return node_platform.PolicyKeys()


@pytest.fixture(scope="module")
def cluster(pushed, local_registry, keys, tmp_path_factory):
    if lacks := missing():
        unavailable(f"a real node needs {', '.join(lacks)}")
    with LocalControlPlane(with_node=True, webhook_tokens=keys.webhook_tokens) as cp, LocalNode(cp) as node:
        node.trust_registry(local_registry)
        import_busybox(node, tmp_path_factory.mktemp("busybox"))
        cp.create_crd(vmtemplate_crd())  # as Krateo would generate it from the chart (Krateo is off)
        for crd in MONITOR_CRDS if MONITORED else []:
            cp.create_crd(local_crd(yaml.safe_load(crd.read_text())))
        with cp.client() as k:
            for tenant in TENANTS:
                create_namespace(k, tenant, labels={TENANT_LABEL: tenant})
            account = {"metadata": {"name": "ci"}}
            assert k.post(f"/api/v1/namespaces/{TENANT_NS}/serviceaccounts", json=account).status_code == 201
        yield cp, node


@pytest.fixture(scope="module")
def database(cluster, pushed):
    """The PostgreSQL pod and its Service: the scheduler pods' URL and the host's."""
    return node_platform.start_postgresql(cluster[0], pushed["postgresql"])


@pytest.fixture(scope="module")
def platform(cluster, pushed, keys, database, tmp_path_factory):
    """`pulumi up` of a stack that installs the scheduler, OPA and the controller (the rest of the
    platform off: its images cannot be had here): the scheduler's URL through its Service and its
    bootstrap admin's token."""
    # a tenant's CI pod, proven by its projected token (TokenReview), not by what it says
    ci = {"serviceAccount": f"{TENANT_NS}/ci", "role": "write", "tenants": ["tenant-a"], "paths": ["pulumi"]}
    config = node_platform.stack_config(pushed, CAPACITY, [ci], keys, monitoring=MONITORED)
    installed = node_platform.install(cluster[0], tmp_path_factory.mktemp("platform"), config, database, keys)
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


# -- OPA's pods and the controller's: the cluster path through pods ------------------------------

POLICY_NS = node_platform.POLICY_NS
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{SCHED_NS}/leases/greenops-controller"
LEASE_SECONDS = 6  # node_platform.stack_config's controller.leaseSeconds


def pods_of(k: httpx.Client, namespace: str, app: str) -> list[dict]:
    selector = f"app.kubernetes.io/name={app}"
    items = k.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": selector}).json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def wait_all_ready(k: httpx.Client, namespace: str, app: str, count: int, timeout: float = 240) -> list[dict]:
    deadline = time.monotonic() + timeout
    pods: list[dict] = []
    while time.monotonic() < deadline:
        pods = pods_of(k, namespace, app)
        ready = [p for p in pods if all(s["ready"] for s in p["status"].get("containerStatuses") or [{"ready": 0}])]
        if len(ready) == count == len(pods):
            return pods
        time.sleep(1)
    raise AssertionError(f"{app}: not {count} Ready pods after {timeout:.0f}s: {[p['status'] for p in pods]}")


def vmtemplates(namespace: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/vmtemplates"


def reservation(platform, key: str) -> dict | None:
    url, admin = platform
    r = httpx.get(f"{url}/reservations/{key}", headers={"Authorization": f"Bearer {admin}"}, timeout=15)
    return None if r.status_code == 404 else r.json()


def wait_confirmed(platform, key: str, timeout: float = 90) -> dict:
    """The controller pod confirmed admission's hold: no hold left, and a phase past it."""
    deadline, row = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        row = reservation(platform, key)
        if row and row["held_until"] is None and row["phase"] in ("Scheduled", "Provisioning", "Running"):
            return row
        time.sleep(1)
    raise AssertionError(f"{key} not confirmed by a controller pod within {timeout:.0f}s: {row}")


def test_opa_and_the_controller_run_restricted_from_the_digests_pushed(cluster, pushed, platform):
    cp, _ = cluster
    with cp.client() as k:
        ns = k.get(f"/api/v1/namespaces/{POLICY_NS}").json()
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        expected = {"opa": "opa", "opa-webhook": "opa", "kube-mgmt": "kube-mgmt-standin"}
        for pod in wait_all_ready(k, POLICY_NS, "opa", 2):
            statuses = {s["name"]: s for s in pod["status"]["containerStatuses"]}
            assert set(statuses) == set(expected), statuses
            for container, image in expected.items():
                assert statuses[container]["imageID"].endswith(pushed[image].split("@")[1]), statuses[container]
        for pod in wait_all_ready(k, SCHED_NS, "greenops-controller", 2):
            (status,) = pod["status"]["containerStatuses"]
            assert status["imageID"].endswith(pushed["greenops"].split("@")[1]), status
        # the API server calls the webhook by its Service, with the CA the stack keeps in state
        hook = k.get("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations").json()["items"]
        (config,) = [w["clientConfig"] for h in hook for w in h["webhooks"]]
        assert config["service"]["namespace"] == POLICY_NS and "url" not in config and config["caBundle"], config


def test_a_tenants_vmtemplate_is_admitted_by_the_opa_pod_and_confirmed_by_a_controller_pod(cluster, platform):
    cp, _ = cluster
    with cp.client() as k:
        wait_all_ready(k, POLICY_NS, "opa", 2)
    with node_platform.tenant_client(cp, "alice", TENANT_NS) as alice:
        made = alice.post(vmtemplates(TENANT_NS), json=template("etl", TENANT_NS))
        assert made.status_code == 201, made.text
        key = made.json()["metadata"]["annotations"]["greenops.io/reservation"]
        # RBAC: her credential covers her namespace only
        assert alice.post(vmtemplates("tenant-b"), json=template("etl", "tenant-b")).status_code == 403
        # the OPA pod's tenancy policy, on the namespaces its kube-mgmt replicated: her namespace is
        # tenant-a's, whatever the spec claims
        claimed = alice.post(vmtemplates(TENANT_NS), json=template("theirs", "tenant-b"))
        assert claimed.status_code in (400, 403) and "tenant" in claimed.text, claimed.text
        assert alice.get(f"{vmtemplates(TENANT_NS)}/theirs").status_code == 404
    booked = reservation(platform, key)
    assert booked is not None and booked["tenant"] == TENANT_NS and booked["path"] == "cluster", booked
    row = wait_confirmed(platform, key)
    assert row["revision"] == booked["revision"]  # confirming is not a new booking


def test_one_controller_pod_leads_and_another_takes_over_when_it_is_deleted(cluster, platform):
    cp, _ = cluster
    with cp.client() as k, node_platform.tenant_client(cp, "alice", TENANT_NS) as alice:
        pods = {p["metadata"]["name"] for p in wait_all_ready(k, SCHED_NS, "greenops-controller", 2)}
        leader = k.get(LEASE_PATH).json()["spec"]["holderIdentity"]
        assert leader in pods, (leader, pods)
        made = alice.post(vmtemplates(TENANT_NS), json=template("before", TENANT_NS))
        assert made.status_code == 201, made.text
        before = made.json()["metadata"]["annotations"]["greenops.io/reservation"]
        wait_confirmed(platform, before)

        gone = k.delete(f"/api/v1/namespaces/{SCHED_NS}/pods/{leader}", params={"gracePeriodSeconds": 0})
        assert gone.status_code == 200, gone.text
        deleted = time.monotonic()
        # meanwhile a tenant goes on: admission books, whichever controller leads confirms
        made = alice.post(vmtemplates(TENANT_NS), json=template("during", TENANT_NS))
        assert made.status_code == 201, made.text
        during = made.json()["metadata"]["annotations"]["greenops.io/reservation"]
        # the deleted pod steps down as it is stopped (an empty holder) or its Lease runs out
        while (holder := k.get(LEASE_PATH).json()["spec"].get("holderIdentity")) in (leader, None):
            assert time.monotonic() - deleted < 3 * LEASE_SECONDS, "nobody took the Lease over"
            time.sleep(0.2)
        took = time.monotonic() - deleted
        print(f"\n{leader} deleted; {holder} leads after {took:.1f}s (Lease {LEASE_SECONDS}s)")
        assert holder in {p["metadata"]["name"] for p in pods_of(k, SCHED_NS, "greenops-controller")}
        assert took <= 2 * LEASE_SECONDS
        row = wait_confirmed(platform, during)
    # nothing lost, nothing twice: one reservation per VmTemplate, each booked once
    url, admin = platform
    listed = httpx.get(
        f"{url}/reservations",
        params={"tenant": TENANT_NS, "path": "cluster", "all": "true"},
        headers={"Authorization": f"Bearer {admin}"},
        timeout=15,
    ).json()["reservations"]
    keys = [r["key"] for r in listed]
    assert keys.count(before) == keys.count(during) == 1, keys
    assert reservation(platform, before)["phase"] == wait_confirmed(platform, before)["phase"]
    assert row["held_until"] is None


def only_now_for(duration: timedelta) -> str:
    """A deadline that leaves a run of ``duration`` no start but now: the scheduler's slots are hours,
    so a deadline past the next hour's start plus ``duration`` would let it choose the next hour
    (when that hour is greener), at a time of day the test cannot choose. Within three minutes of
    the hour it waits for the hour, for the run to have room."""
    now = datetime.now(UTC)
    hour = (now + timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
    if hour - now < timedelta(minutes=3):
        time.sleep((hour - now).total_seconds() + 1)
        hour += timedelta(hours=1)
    return stamp(hour + duration - timedelta(seconds=1))


def test_a_day_through_the_pods_gate_render_run_and_retire(cluster, platform):
    """A tenant's VmTemplate, its only window now (a run of two minutes, due before the next hour
    could hold it): the OPA pod admits it, the leading controller pod opens its gate (a render
    asked, a new generation), Krateo renders the VM (the stand-in, with Krateo's rules for when),
    the run starts, and at its end it is retired; the report reads each phase from the scheduler
    pods."""
    cp, _ = cluster
    url, admin = platform
    crd = default_crd_dir() / "compute.azure.com_virtualmachines.yaml"
    if not crd.is_file():
        pytest.skip(f"upstream CRD {crd} is absent (see ../shared/crds)")
    cp.create_crd(local_crd(yaml.safe_load(crd.read_text())))
    vms = f"/apis/{ASO_VM[0]}/{ASO_VM[1]}/namespaces/{{ns}}/{ASO_VM[2]}"
    spec = {"duration": "2m", "eligibleProviders": ["azure"], "deadline": only_now_for(timedelta(minutes=2))}
    report = RetryingClient(url, token=admin)

    def phase(key: str) -> str:
        (row,) = [r for r in listed(report, path="cluster", tenant=TENANT_NS) if r["key"] == key]
        return str(row["phase"])

    def seen(key: str) -> str:
        """What a failure says: the record's row, the VmTemplate, the renders, the controllers' logs."""
        with cp.client() as k:
            stored = k.get(f"{vmtemplates(TENANT_NS)}/nightly").json()
            logs_ = {
                p["metadata"]["name"]: logs(k, SCHED_NS, p["metadata"]["name"])[-1500:]
                for p in pods_of(k, SCHED_NS, "greenops-controller")
            }
        return (
            f"row {reservation(platform, key)}\nstored {stored}\nrenders {krateo.renders}\n"
            f"failed renders {krateo.failures}\nlogs {logs_}"
        )

    def wait_for(key: str, wanted: str, timeout: float) -> float:
        began = time.monotonic()
        while (now := phase(key)) != wanted:
            assert time.monotonic() - began < timeout, f"{key}: {now}, not {wanted}, after {timeout:.0f}s\n{seen(key)}"
            time.sleep(1)
        return time.monotonic() - began

    with (
        KrateoStandIn(cp.client, f"/apis/{GROUP}/{VERSION}/vmtemplates", vms, aso_vm_of, None, 600) as krateo,
        node_platform.tenant_client(cp, "alice", TENANT_NS) as alice,
        cp.client() as k,
    ):
        made = alice.post(vmtemplates(TENANT_NS), json=template("nightly", TENANT_NS, **spec))
        assert made.status_code == 201, made.text
        admitted = made.json()
        key = admitted["metadata"]["annotations"]["greenops.io/reservation"]
        start = parse_time(admitted["spec"]["schedulingTime"])
        assert admitted["spec"]["provider"] == "azure", admitted["spec"]
        assert abs((start - datetime.now(UTC)).total_seconds()) < 90, admitted["spec"]  # its only window: now
        to_run = wait_for(key, "Running", 120)
        # Krateo renders what the gate asked for (the controller records Running as it asks: no
        # operator is watched here, readiness: applied), within its poll
        vm = k.get(f"{vms.format(ns=TENANT_NS)}/nightly-vm")
        for _ in range(100):
            if vm.status_code == 200:
                break
            time.sleep(0.1)
            vm = k.get(f"{vms.format(ns=TENANT_NS)}/nightly-vm")
        assert vm.status_code == 200, f"{vm.text}\nscheduled {start}\n{seen(key)}"
        stored = k.get(f"{vmtemplates(TENANT_NS)}/nightly").json()
        assert stored["metadata"]["generation"] > 1 and stored["spec"].get("render"), stored  # the gate's render
        to_end = wait_for(key, "Completed", 240)
        # retired: the controller asked for a render at the run's end, and Krateo removed the VM
        assert k.get(f"{vms.format(ns=TENANT_NS)}/nightly-vm").status_code == 404
        assert [why for name, _, why in krateo.renders if name == f"{TENANT_NS}/nightly"][-2:] == [
            "generation 1 -> 2",
            "generation 2 -> 3",
        ]
        assert krateo.failures == [], seen(key)
        print(f"\n{key}: Running after {to_run:.0f}s, Completed {to_end:.0f}s later; renders {krateo.renders}")


def test_prometheus_scrapes_every_pod_the_monitors_select_with_the_credentials_they_name(cluster, platform, tmp_path):
    """The ServiceMonitor, the PodMonitors and the PrometheusRule the stack installed, as the
    Prometheus Operator would give them to a real Prometheus (tests/support/monitors.py; the operator
    cannot run here): it discovers the pods through the API server and scrapes both scheduler pods
    with Prometheus's token, both OPA pods over TLS with OPA's scraper token and the CA in state, and
    both controller pods; the alerts load and evaluate."""
    if not MONITORED:
        pytest.skip(f"the Prometheus Operator's CRDs are absent from {default_crd_dir()} (see ../shared/crds)")
    cp, _ = cluster
    token = tmp_path / "api-token"
    token.write_text(cp.token)
    token.chmod(0o600)
    monitors = [
        ("ServiceMonitor", SCHED_NS, "greenops-scheduler"),
        ("PodMonitor", node_platform.POLICY_NS, "greenops-opa"),
        ("PodMonitor", SCHED_NS, "greenops-controller"),
    ]
    with cp.client() as k:
        jobs = [j for m in monitors for j in scrape_jobs(k, *m, cp.server, str(token), tmp_path / "mounted")]
        rule = k.get(f"{MONITORING_API}/namespaces/{SCHED_NS}/prometheusrules/greenops-alerts")
        assert rule.status_code == 200, rule.text
    groups = rule.json()["spec"]["groups"]
    rules = tmp_path / "greenops-alerts.yaml"
    rules.write_text(json.dumps({"groups": groups}))
    with PrometheusServer(jobs=jobs, workdir=tmp_path / "prometheus", rule_files=[rules]) as prom:
        up = "count by (greenops_component) (up == 1)"
        got = by_label(
            prom.wait_for(up, lambda r: by_label(r, alerts.COMPONENT_LABEL) == ALL_UP, 60), alerts.COMPONENT_LABEL
        )
        assert got == ALL_UP, (
            f"{got}; targets: {httpx.get(f'{prom.url}/api/v1/targets').json()['data']['activeTargets']}"
        )
        # the scheduler's own series, named by the part the relabeling sets
        assert prom.query('count({__name__=~"greenops_scheduler_.+", greenops_component="scheduler"})')
        loaded = httpx.get(f"{prom.url}/api/v1/rules").json()["data"]["groups"]
    assert sorted(g["name"] for g in loaded) == sorted(g["name"] for g in groups)
    assert all(r["health"] in ("ok", "unknown") for g in loaded for r in g["rules"]), loaded
