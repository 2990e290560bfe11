"""Issue 16 item 4: our own vm-template chart, installed for real.

The package ``python -m greenops.charts`` builds is installed by the real ``helm`` into the local
kube-apiserver, which holds the real upstream CRDs (ASO, Config Connector, ACK) from ../shared/crds.
One release per provider goes through the whole life of a decided VmTemplate:

- before the start (less the lead): ``helm install`` succeeds and nothing provider-specific is stored;
- inside the window: ``helm upgrade`` applies the provider objects and the API server accepts them;
- after schedulingTime + duration: ``helm upgrade`` deletes them all.

The chart's clock is Sprig's ``now`` (``vmtemplate.due`` in _helpers.tpl): helm's real clock, not a
value, and nothing in the rendered objects carries schedulingTime. The gate depends only on
``now - schedulingTime``, so each phase is reached by placing the decision's schedulingTime relative
to the real clock (two hours ahead, one hour ago, three hours ago for a 2 h run), exactly as if the
clock had moved on by that much.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from greenops.catalog import select_size
from greenops.common import clock
from greenops.common.toolpaths import REPO
from greenops.local.controlplane import LocalControlPlane
from greenops.models import Decision, Workload
from greenops.renderers import RenderSettings, render
from greenops.renderers.user_data import REPORT_KEY, REPORT_SECRET_SUFFIX, report_script
from greenops.renderers.user_data import user_data as user_data_text
from greenops.validation.crd import default_crd_dir
from tests.charts.test_vm_template_chart import stem_of
from tests.support.common import SSH_KEY as KEY
from tests.support.common import require_tool
from tests.support.references import GROUP_ID, group_reported
from tests.support.upstream_crds import local_crd

pytestmark = [pytest.mark.e2e, pytest.mark.tools, pytest.mark.crds]

RUN = timedelta(hours=2)
# The API groups of the provider objects the chart can emit: every upstream CRD of these groups
# in ../shared/crds is installed, and every one of their kinds is listed in the checks.
GROUPS = {
    "azure": ("resources.azure.com", "network.azure.com", "compute.azure.com"),
    "gcp": ("compute.cnrm.cloud.google.com",),
    "aws": ("ec2.services.k8s.aws",),
}
# The provider-specific minimum sets (DESIGN.md, thesis 3.4) that must be among the stored kinds.
MINIMUM = {
    "azure": {"VirtualNetwork", "VirtualNetworksSubnet", "NetworkInterface", "VirtualMachine"},
    "gcp": {"ComputeNetwork", "ComputeSubnetwork", "ComputeInstance"},
    "aws": {"VPC", "Subnet", "SecurityGroup", "Instance"},
}
DECISIONS = [("azure", "francecentral"), ("gcp", "europe-west1"), ("aws", "eu-west-3")]


def stamp(offset: timedelta) -> str:
    return clock.stamp(datetime.now(UTC) + offset)


@pytest.fixture(scope="module")
def chart_package(tmp_path_factory) -> Path:
    """The chart exactly as it ships: built by ``python -m greenops.charts``."""
    require_tool("helm")
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "greenops.charts", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.strip().rsplit(" ", 1)[-1])
    assert path.is_file() and path.parent == out and path.name.startswith("vm-template-") and path.suffix == ".tgz"
    return path


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """etcd + kube-apiserver with the upstream CRDs of every provider group; plus helm's env."""
    for tool in ("etcd", "kube-apiserver", "helm"):
        require_tool(tool)
    folder = default_crd_dir()
    if not folder.is_dir():
        pytest.skip(f"upstream CRD folder {folder} is absent")
    wanted = {g for groups in GROUPS.values() for g in groups}
    crds = [
        yaml.load(f.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for f in sorted(folder.glob("*.yaml"))
        if f.name.split("_", 1)[0] in wanted
    ]
    assert {c["spec"]["group"] for c in crds} == wanted, "an upstream CRD group is missing from ../shared/crds"
    home = tmp_path_factory.mktemp("helm")
    with LocalControlPlane() as cp:
        for crd in crds:
            cp.create_crd(local_crd(crd))
        env = dict(
            os.environ,
            KUBECONFIG=str(cp.kubeconfig_path),
            HOME=str(home),
            HELM_CACHE_HOME=str(home / "cache"),
            HELM_CONFIG_HOME=str(home / "config"),
            HELM_DATA_HOME=str(home / "data"),
        )
        kinds = {}  # provider -> {kind: (group, storage version, plural)}
        for crd in crds:
            provider = next(p for p, groups in GROUPS.items() if crd["spec"]["group"] in groups)
            storage = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
            kinds.setdefault(provider, {})[crd["spec"]["names"]["kind"]] = (
                crd["spec"]["group"],
                storage,
                crd["spec"]["names"]["plural"],
            )
        ready(cp, kinds)
        yield {"cp": cp, "env": env, "kinds": kinds}


def ready(cp: LocalControlPlane, kinds: dict, timeout: float = 120.0) -> None:
    """Established is not yet servable: a new CRD's watch cache answers 429 "storage is
    (re)initializing" for a while. Wait until every kind lists."""
    deadline = time.monotonic() + timeout
    with cp.client() as k:
        for group, version, plural in (t for per in kinds.values() for t in per.values()):
            while (r := k.get(f"/apis/{group}/{version}/{plural}")).status_code == 429 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert r.status_code == 200, f"{plural}.{group}: {r.text}"


def helm(api, *args: str, values: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [require_tool("helm"), *args, *(["-f", "-"] if values is not None else [])],
        input=json.dumps(values) if values is not None else None,
        capture_output=True,
        text=True,
        env=api["env"],
        timeout=300,
    )


def stored(api, provider: str, namespace: str) -> dict[str, list[dict]]:
    """Every object of every kind the provider's CRDs define, in the namespace: {kind: [objects]}."""
    found = {}
    with api["cp"].client() as k:
        for kind, (group, version, plural) in sorted(api["kinds"][provider].items()):
            r = k.get(f"/apis/{group}/{version}/namespaces/{namespace}/{plural}")
            assert r.status_code == 200, r.text
            if r.json()["items"]:
                found[kind] = r.json()["items"]
    return found


def act_as_ack(api, namespace: str, group: str, status: dict) -> None:
    """What the ACK controller writes once AWS has created the group (the status subresource)."""
    with api["cp"].client() as k:
        r = k.patch(
            f"/apis/ec2.services.k8s.aws/v1alpha1/namespaces/{namespace}/securitygroups/{group}/status",
            json={"status": status},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 200, r.text


def python_instance(catalog, decided: dict, start: str, stem: str) -> dict:
    w = Workload.model_validate(
        {
            "name": decided["vmName"],
            "cpu": decided["cpu"],
            "memory": decided["memory"],
            "duration": decided["duration"],
            "deadline": decided["deadline"],
            "originRegion": decided["originRegion"],
            "tenant": decided["tenant"],
            "run": decided["run"],
            "image": decided["image"],
        }
    )
    region = decided["schedulingLocation"]
    d = Decision(
        provider="aws",
        region=region,
        zone=catalog.region("aws", region).zone,
        scheduling_time=start,
        vm_size=decided["vmSize"],
        image=catalog.image("aws", region, w.image),
    )
    objects = render(
        w,
        d,
        RenderSettings(namespace=decided["namespace"], ssh_public_key=KEY),
        observed=group_reported(stem),
        stem=stem,
    )
    return next(o for o in objects if o["kind"] == "Instance")


def contained(want, got, path: str = "") -> list[str]:
    """Where ``want`` is not a part of ``got`` (the server may add defaults, never drop a field)."""
    if isinstance(want, dict) and isinstance(got, dict):
        return [
            e
            for key, value in want.items()
            for e in (contained(value, got[key], f"{path}.{key}") if key in got else [f"{path}.{key}: dropped"])
        ]
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [e for i, (w, g) in enumerate(zip(want, got, strict=False)) for e in contained(w, g, f"{path}[{i}]")]
    return [] if want == got else [f"{path}: rendered {want!r}, stored {got!r}"]


@pytest.mark.parametrize("provider,region", DECISIONS, ids=[p for p, _ in DECISIONS])
def test_helm_installs_the_packaged_chart_through_the_vm_lifecycle(api, chart_package, catalog, provider, region):
    namespace, release = f"vmt-{provider}", f"vm-{provider}"
    decided = {
        "vmName": f"train-{provider}",
        "cpu": 4,
        "memory": 8,
        "duration": "2h",
        "deadline": stamp(timedelta(days=3)),
        "maxLatency": 2000,
        "originRegion": "westeurope",
        "tenant": "team-a",
        "sshPublicKey": KEY,
        # what the VM runs: the real CRDs must take the user-data each operator is given
        "run": {"script": "#!/bin/sh\necho done > /var/tmp/result\n"},
        "image": "ubuntu-24.04",  # a named image: the real CRDs take each provider's form of it
        "namespace": namespace,
        "gcpProject": "greenops-e2e",
        "azureResourceGroup": "greenops-workloads",
        "azureSubscriptionId": "2f3a9c1e-7b4d-4e8a-9c61-0d5b8e7f4a21",
        "provider": provider,
        "schedulingLocation": region,
        "vmSize": select_size(catalog, provider, region, 4, 8).name,
    }
    timings = {}

    # 1. Before schedulingTime - lead: the release exists, nothing provider-specific does.
    t = time.perf_counter()
    before = helm(
        api,
        "install",
        release,
        str(chart_package),
        "-n",
        namespace,
        "--create-namespace",
        values=dict(decided, schedulingTime=stamp(2 * RUN)),
    )
    timings["install (before)"] = time.perf_counter() - t
    assert before.returncode == 0, before.stderr
    assert stored(api, provider, namespace) == {}

    # 2. Inside the window: the upgrade applies the provider objects and the real CRDs accept them.
    inside = dict(decided, schedulingTime=stamp(-timedelta(hours=1)))
    t = time.perf_counter()
    upgrade = helm(api, "upgrade", release, str(chart_package), "-n", namespace, values=inside)
    timings["upgrade (inside)"] = time.perf_counter() - t
    assert upgrade.returncode == 0, f"the API server rejected the chart's {provider} objects:\n{upgrade.stderr}"
    if provider == "aws":
        # ACK's Instance takes its group by id: it follows once the controller reports the group's id.
        assert "Instance" not in stored(api, provider, namespace)
        stem = stem_of(decided["vmName"], namespace, release)
        group = f"{stem}-sg"
        act_as_ack(api, namespace, group, {"id": GROUP_ID})
        t = time.perf_counter()
        upgrade = helm(api, "upgrade", release, str(chart_package), "-n", namespace, values=inside)
        timings["upgrade (group id reported)"] = time.perf_counter() - t
        assert upgrade.returncode == 0, upgrade.stderr
        instance = stored(api, provider, namespace)["Instance"][0]
        assert instance["spec"]["securityGroupIDs"] == [GROUP_ID]
        # The Python renderer, given the same report, renders the same Instance.
        python = python_instance(catalog, decided, inside["schedulingTime"], stem)
        assert contained(python["spec"], instance["spec"]) == [] and instance["spec"].keys() == python["spec"].keys()
        # A status that blinks during a re-sync keeps the Instance, attached.
        act_as_ack(api, namespace, group, {"id": None})
        assert helm(api, "upgrade", release, str(chart_package), "-n", namespace, values=inside).returncode == 0
        assert stored(api, provider, namespace)["Instance"][0]["spec"]["securityGroupIDs"] == [GROUP_ID]
    # What the release holds now, rendered against this cluster (lookup reads it, as upgrade did).
    rendered = helm(api, "template", release, str(chart_package), "-n", namespace, "--dry-run=server", values=inside)
    assert rendered.returncode == 0, rendered.stderr
    expected = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    assert MINIMUM[provider] <= {o["kind"] for o in expected}
    assert "unknown field" not in upgrade.stderr, upgrade.stderr  # the server would have pruned it
    now = stored(api, provider, namespace)
    assert {(k, o["metadata"]["name"]) for k, objs in now.items() for o in objs} == {
        (o["kind"], o["metadata"]["name"]) for o in expected
    }
    by_name = {(k, o["metadata"]["name"]): o for k, objs in now.items() for o in objs}
    for obj in expected:
        got = by_name[(obj["kind"], obj["metadata"]["name"])]
        assert contained(obj["spec"], got["spec"]) == [], f"{obj['kind']} {obj['metadata']['name']}"
        assert contained(obj["metadata"].get("labels", {}), got["metadata"]["labels"]) == []
        assert got["metadata"]["annotations"]["meta.helm.sh/release-name"] == release

    # 3. After schedulingTime + duration: the upgrade renders nothing and helm deletes every object.
    t = time.perf_counter()
    after = helm(
        api,
        "upgrade",
        release,
        str(chart_package),
        "-n",
        namespace,
        values=dict(decided, schedulingTime=stamp(-RUN - timedelta(hours=1))),
    )
    timings["upgrade (after)"] = time.perf_counter() - t
    assert after.returncode == 0, after.stderr
    assert stored(api, provider, namespace) == {}
    status = helm(api, "status", release, "-n", namespace, "-o", "json")
    assert status.returncode == 0 and json.loads(status.stdout)["info"]["status"] == "deployed"
    assert json.loads(status.stdout)["version"] == (5 if provider == "aws" else 3)  # aws: two more upgrades
    print(f"\nhelm {provider}: " + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()))


def gcp_values(vm_name: str, namespace: str, start: str) -> dict:
    return {
        "vmName": vm_name,
        "cpu": 4,
        "memory": 8,
        "duration": "2h",
        "deadline": stamp(timedelta(days=3)),
        "maxLatency": 2000,
        "tenant": namespace,
        "gcpProject": "greenops-e2e",
        "provider": "gcp",
        "schedulingLocation": "europe-west1",
        "vmSize": "e2-standard-4",
        "schedulingTime": start,
    }


def test_two_tenants_with_the_same_vmname_are_both_stored(api, chart_package):
    """Each release (Krateo's: one per VmTemplate, in its namespace) stores its own set; neither
    overwrites, adopts or blocks the other's."""
    inside = stamp(-timedelta(hours=1))
    for ns in ("tenant-a", "tenant-b"):
        result = helm(
            api, "install", "train", str(chart_package), "-n", ns, "--create-namespace",
            values=gcp_values("train", ns, inside),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    names = {
        ns: {(k, o["metadata"]["name"]) for k, objs in stored(api, "gcp", ns).items() for o in objs}
        for ns in ("tenant-a", "tenant-b")
    }
    assert len(names["tenant-a"]) == 3 and len(names["tenant-b"]) == 3
    assert names["tenant-a"].isdisjoint(names["tenant-b"])  # the names Config Connector gives GCP differ too
    for ns in ("tenant-a", "tenant-b"):
        assert {n for _, n in names[ns]} == {stem_of("train", ns, "train") + s for s in ("", "-network", "-subnet")}
        assert helm(api, "uninstall", "train", "-n", ns).returncode == 0


def test_a_set_made_before_the_hashed_names_keeps_its_names(api, chart_package):
    """A release whose network already has the old name <vmName>-network keeps its names on the
    upgrade to this chart, so the running VM is not replaced."""
    ns, release = "tenant-legacy", "etl"
    with api["cp"].client() as k:
        k.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        legacy = {
            "apiVersion": "compute.cnrm.cloud.google.com/v1beta1",
            "kind": "ComputeNetwork",
            "metadata": {
                "name": "etl-network",
                "namespace": ns,
                # what helm wrote on the objects of the earlier chart's release
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns},
            },
            "spec": {"autoCreateSubnetworks": False, "routingMode": "REGIONAL"},
        }
        r = k.post(f"/apis/compute.cnrm.cloud.google.com/v1beta1/namespaces/{ns}/computenetworks", json=legacy)
        assert r.status_code == 201, r.text
    result = helm(api, "install", release, str(chart_package), "-n", ns, values=gcp_values("etl", ns, stamp(-RUN / 2)))
    assert result.returncode == 0, result.stderr
    kept = {o["metadata"]["name"] for objs in stored(api, "gcp", ns).values() for o in objs}
    assert kept == {"etl", "etl-network", "etl-subnet"}
    assert helm(api, "uninstall", release, "-n", ns).returncode == 0


def test_the_runs_report_comes_from_its_secret_never_from_a_value(api, chart_package):
    """The controller writes the run's report script (it carries the completion token) to the Secret
    <release>-greenops-run at the gate; the chart reads it with lookup into the user-data, byte for
    byte what the Python renderer writes given the same script. Without the Secret the user-data has
    no report, and no value of the chart can put one in."""
    ns, release = "tenant-report", "etl"
    run = {"script": "#!/bin/sh\necho done\n"}
    inside = dict(gcp_values("etl", ns, stamp(-timedelta(hours=1))), run=run)
    assert (
        helm(api, "install", release, str(chart_package), "-n", ns, "--create-namespace", values=inside).returncode == 0
    )

    def user_data() -> str:
        [instance] = stored(api, "gcp", ns)["ComputeInstance"]
        return next(i["value"] for i in instance["spec"]["metadata"] if i["key"] == "user-data")

    workload = Workload.model_validate(
        {"name": "etl", "cpu": 4, "memory": 8, "duration": "2h", "deadline": inside["deadline"],
         "originRegion": "westeurope", "tenant": ns, "run": run}
    )  # fmt: skip
    assert user_data() == user_data_text(workload)  # no report yet
    script = report_script("http://127.0.0.1:8080/reservations/tenant-report/etl/0f7e/completion", "gor_" + "x" * 43)
    with api["cp"].client() as k:
        secret = {
            "metadata": {"name": f"{release}{REPORT_SECRET_SUFFIX}"},
            "data": {REPORT_KEY: base64.b64encode(script.encode()).decode()},
        }
        assert k.post(f"/api/v1/namespaces/{ns}/secrets", json=secret).status_code == 201
    assert helm(api, "upgrade", release, str(chart_package), "-n", ns, values=inside).returncode == 0
    assert user_data() == user_data_text(workload, script)
    assert "report.sh" in user_data() and "gor_" not in json.dumps(inside)
    assert helm(api, "uninstall", release, "-n", ns).returncode == 0


def test_the_runs_env_comes_from_the_namespaces_run_secrets(api, chart_package):
    """run.env names keys of the Secret greenops-run-secrets in the VmTemplate's namespace: the chart
    reads their values (lookup) into the user-data, byte for byte as the Python renderer writes them
    from greenops:runSecrets; a key the Secret lacks fails the render naming the field; no value is
    ever a chart value."""
    ns, release = "tenant-env", "etl"
    run = {"script": "#!/bin/sh\necho done\n", "env": [{"name": "DB_PASSWORD", "secret": "db"}]}
    inside = dict(gcp_values("etl", ns, stamp(-timedelta(hours=1))), run=run)
    with api["cp"].client() as k:
        assert k.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    missing = helm(api, "install", release, str(chart_package), "-n", ns, values=inside)
    assert missing.returncode != 0
    assert 'run.env[0].secret "db" (DB_PASSWORD): no such key in the Secret greenops-run-secrets' in missing.stderr
    password = "s3cr3t-'quoted' $value"
    with api["cp"].client() as k:
        secret = {
            "metadata": {"name": "greenops-run-secrets"},
            "data": {"db": base64.b64encode(password.encode()).decode()},
        }
        assert k.post(f"/api/v1/namespaces/{ns}/secrets", json=secret).status_code == 201
    done = helm(api, "install", release, str(chart_package), "-n", ns, values=inside)
    assert done.returncode == 0, done.stderr
    [instance] = stored(api, "gcp", ns)["ComputeInstance"]
    text = next(i["value"] for i in instance["spec"]["metadata"] if i["key"] == "user-data")
    workload = Workload.model_validate(
        {"name": "etl", "cpu": 4, "memory": 8, "duration": "2h", "deadline": inside["deadline"],
         "originRegion": "westeurope", "tenant": ns, "run": run}
    )  # fmt: skip
    assert text == user_data_text(workload, secrets={"db": password})
    assert password not in json.dumps(inside) and "/var/lib/greenops/run.env" in text
    assert helm(api, "uninstall", release, "-n", ns).returncode == 0
