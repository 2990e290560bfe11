"""``greenops demo``: the whole system on one machine, no cloud account.

On loopback: etcd + kube-apiserver, the scheduler, OPA (HTTPS, with the policy bundle) as the
mutating webhook for VmTemplate. Then both paths of the design:
- Pulumi: the dev stack's sample workloads placed by GreenVm and, when due, applied to the API
  server as ASO / Config Connector / ACK objects;
- cluster: VmTemplates created through the API server and patched by OPA from the scheduler.
"""
from __future__ import annotations

import json
import shutil
import signal
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

from greenops import automation, placements, report
from greenops.httpclient import RetryingClient
from greenops.local.controlplane import LocalControlPlane
from greenops.local.scheduler import SchedulerServer
from greenops.local.tools import REPO
from greenops.local.webhook import GROUP, VERSION, install_admission, loopback_tls
from greenops.policies.server import OpaServer


def say(text: str = "") -> None:
    print(text, flush=True)


def demo_project(folder: Path, cp: LocalControlPlane, opa_url: str, scheduler_url: str, ca_pem: str) -> Path:
    """A copy of the project whose ``demo`` stack is the dev stack pointed at the local servers."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
    (folder / "stacks").mkdir(exist_ok=True)
    config = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    # GreenVm trusts the local OPA's throw-away CA as a prod stack trusts the platform's (caCertificate)
    config["greenops:endpoints"] = {"opaUrl": opa_url, "schedulerUrl": scheduler_url, "timeoutSeconds": 10,
                                    "caCertificate": ca_pem}
    # No operator runs on this machine, so nothing would ever report a VM ready: a run counts from
    # when its objects are applied (readiness: applied), and the demo says so.
    config["greenops:kubernetes"] = {"mode": "cluster", "installCrdStubs": True, "readiness": "applied"}
    (folder / "stacks" / "Pulumi.demo.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return folder


def vmtemplate(name: str, **spec) -> dict:
    base = {"vmName": name, "cpu": 2, "memory": 4, "duration": "2h", "maxLatency": 2000, "tenant": "demo",
            "deadline": (datetime.now(timezone.utc) + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    base.update(spec)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VmTemplate", "metadata": {"name": name}, "spec": base}


RECORD = REPO / "build" / "demo" / "reservations.db"  # outlives the demo: a restart shows the same reservations


def active_reservations(scheduler_url: str) -> list[dict]:
    with RetryingClient(scheduler_url) as client:
        return placements.active(client)


def demo(once: bool = True, record: Path = RECORD) -> int:
    work = Path(tempfile.mkdtemp(prefix="greenops-demo-"))
    record.parent.mkdir(parents=True, exist_ok=True)
    say("GreenOps demo: carbon-aware VM placement, everything on this machine (no cloud account).")
    say("Starting a local Kubernetes API server (etcd + kube-apiserver), the scheduler and OPA...")
    tls = loopback_tls(work / "tls")
    # the controller manager runs the garbage collector, which deletions through Pulumi wait for
    with LocalControlPlane(with_controller_manager=True) as cp, SchedulerServer(database=f"sqlite:///{record}") as sched, \
            OpaServer(scheduler_url=sched.url, tls_cert=tls.cert_file, tls_key=tls.key_file) as opa:
        say(f"  API server {cp.server}   scheduler {sched.url}   OPA {opa.url} (policy bundle loaded)")
        earlier = active_reservations(sched.url)
        say(f"  reservation record {record}: {len(earlier)} active from earlier runs "
            "(the same workloads are booked under the same keys, never twice)")
        install_admission(cp, opa.url, tls.ca_pem, ("greenops", "demo"))
        say("  installed: the VmTemplate CRD and the mutating webhook (VmTemplate CREATE/UPDATE -> OPA places and books; DELETE -> OPA releases)")

        say("\n1) Pulumi path: `up` of the dev stack's sample workloads against the local API server")
        project = demo_project(work / "project", cp, opa.url, sched.url, tls.ca_pem.decode())
        (work / "state").mkdir()
        st = automation.stack("demo", work_dir=project, env={
            "PULUMI_BACKEND_URL": f"file://{work / 'state'}", "KUBECONFIG": str(cp.kubeconfig_path)})
        st.set_config("greenops:kubeconfig", automation.auto.ConfigValue(cp.kubeconfig_path.read_text(), secret=True))
        started = time.monotonic()
        result = automation.run(st, "up", stream=False)
        say(f"   {', '.join(f'{k} {v}' for k, v in result.summary.resource_changes.items())} in {time.monotonic() - started:.1f} s")
        rows = report.account(automation.placements(st))
        say(report.table(rows))
        plot = report.plot(rows, REPO / "build" / "demo" / "placements.png")
        with cp.client() as k:
            kinds = {}
            for api, plural in [("compute.azure.com/v1api20220301", "virtualmachines"),
                                ("compute.cnrm.cloud.google.com/v1beta1", "computeinstances"),
                                ("ec2.services.k8s.aws/v1alpha1", "instances")]:
                items = k.get(f"/apis/{api}/namespaces/greenops/{plural}").json().get("items", [])
                kinds[plural] = [i["metadata"]["name"] for i in items]
        say(f"   VMs now in the API server (due workloads only): {json.dumps(kinds)}")
        say("   (no operator runs here, so readiness is 'applied': a run starts when its objects are applied)")
        say(f"   plot of the chosen zones and windows: {plot}")

        say("\n2) Cluster path (the thesis): VmTemplates through the API server, patched by OPA's webhook")
        cases = [vmtemplate("etl-eu", originRegion="westeurope", dataResidency="eu"),
                 vmtemplate("render-milan", originRegion="italynorth", maxLatency=30, cpu=8, memory=16),
                 vmtemplate("impossible", originRegion="westus", dataResidency="eu", maxLatency=10)]
        with cp.client() as k:
            for vm in cases:
                r = k.post(f"/apis/{GROUP}/{VERSION}/namespaces/demo/vmtemplates", json=vm)
                if r.status_code == 201:
                    s = r.json()["spec"]
                    say(f"   admitted {vm['metadata']['name']:13} -> {s['provider']}/{s['schedulingLocation']} "
                        f"size {s['vmSize']} at {s['schedulingTime']}")
                else:
                    say(f"   rejected {vm['metadata']['name']:13} -> {r.json().get('message', r.text)[:400]}")
        say("\n3) The scheduler's record of placements, both paths (greenops placements):")
        say(placements.table(active_reservations(sched.url)))
        if not once:
            # The handler goes in before the prompt: a Ctrl-C sent as soon as the line shows must
            # take the orderly path below, not interrupt it half-way.
            stop = threading.Event()
            signal.signal(signal.SIGINT, lambda *_: stop.set())
            say("\nEverything stays up; Ctrl-C stops it (the Pulumi path's reservations stay in the record). "
                f"Try: KUBECONFIG={cp.kubeconfig_path} kubectl get vmtemplates -A")
            stop.wait()
        # The VmTemplates go with this control plane: deleting them releases their reservations.
        with cp.client() as k:
            for vm in cases:
                k.delete(f"/apis/{GROUP}/{VERSION}/namespaces/demo/vmtemplates/{vm['metadata']['name']}")
        if once:
            say("\nTearing down (--once): destroying the demo stack, stopping the servers.")
            automation.run(st, "destroy", stream=False)
            st.workspace.remove_stack("demo")
        say(f"reservation record {record}: {len(active_reservations(sched.url))} active left")
    shutil.rmtree(work, ignore_errors=True)
    return 0
