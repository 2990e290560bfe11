#!/usr/bin/env python3
"""The platform on a real node here, for a newcomer: `make demo-node` (as root).

It builds the greenops, OPA, PostgreSQL and kube-mgmt stand-in images (the release's own builders),
pushes them to a registry on loopback, and starts etcd, kube-apiserver, the controller manager,
kube-scheduler and a real node (containerd, runc, a kubelet, kube-proxy, CoreDNS). It starts
PostgreSQL in a pod, then `pulumi up` installs the scheduler, OPA with its webhook and the
controller from their images pinned by digest. A tenant books a day of workloads through the
scheduler's Service, and its developers apply two VmTemplates, admitted by the OPA pods and
confirmed by the leading controller pod. Printed at the end: every pod as `kubectl get pods -A`
lists it, and the day's result as read back from the record. Everything is taken down on exit.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.local import node_platform
from greenops.local.controlplane import LocalControlPlane
from greenops.local.node import LocalNode, missing
from greenops.local.scheduler import issue_credential
from greenops.local.webhook import GROUP, VERSION, vmtemplate_crd
from greenops.policies.webhook import TENANT_LABEL

ROOT = Path(__file__).resolve().parents[1]
# the release tooling (not in the wheel) from the checkout this script belongs to
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# a day of one tenant's batch work: (name, vCPUs, hours, hours until its deadline), over four EU zones
DAY = [("etl", 4, 2, 12), ("train", 8, 4, 20), ("report", 2, 1, 6), ("backfill", 4, 3, 24), ("index", 2, 2, 10)]
ZONES = ["FR", "DE", "PL", "NL"]
# and two VmTemplates its developers apply to the cluster: (name, vCPUs, hours, hours until its deadline)
CLUSTER_DAY = [("nightly-train", 4, 2, 18), ("weekly-report", 2, 1, 30)]
TENANT = "acme"
IMAGES = ("greenops", "opa", "postgresql", "kube-mgmt-standin")


def main() -> int:
    from release import registry, steps

    console = Console(width=150)  # the tables whole, also when the output is a file or a pipe
    if os.geteuid() != 0:
        console.print("a real node needs root (containerd, runc, iptables): run it as root")
        return 2
    if lacks := missing():
        console.print(f"a real node cannot run here: missing {', '.join(lacks)}")
        return 2
    with tempfile.TemporaryDirectory(prefix="greenops-demo-node-") as tmp:
        work = Path(tmp)
        began = time.monotonic()
        console.print("building the greenops, OPA, PostgreSQL and kube-mgmt stand-in images ...")
        manifest = steps.build(work / "release", only=list(IMAGES))
        console.print(f"  built in {time.monotonic() - began:.0f}s")
        keys = node_platform.PolicyKeys()
        with registry.local_registry(work / "registry") as host:
            refs = {name: registry.push_pinned(entry, host, name) for name, entry in manifest["images"].items()}
            console.print("starting the control plane and the node ...")
            with (
                LocalControlPlane(with_node=True, webhook_tokens=keys.webhook_tokens) as cp,
                LocalNode(cp) as node,
            ):
                node.trust_registry(host)
                cp.create_crd(vmtemplate_crd())  # as Krateo would generate it from the chart
                with cp.client() as k:
                    node_platform.create_restricted_namespace(k, TENANT, labels={TENANT_LABEL: TENANT})
                database = node_platform.start_postgresql(cp, refs["postgresql"])
                console.print(
                    "pulumi up: the scheduler, OPA and the controller, two of each, on PostgreSQL in a pod ..."
                )
                config = node_platform.stack_config(refs, 64, keys=keys)
                installed = node_platform.install(cp, work / "stack", config, database, keys)
                console.print(f"  installed in {installed.seconds:.0f}s")
                book_day(installed)
                rows = cluster_day(cp, installed)
                show_pods(console, node_platform.pods_table(cp))
                show_day(console, rows)
    return 0


def cluster_day(cp: LocalControlPlane, installed: node_platform.Installed, timeout: float = 120) -> list[dict]:
    """The tenant's VmTemplates, with a credential whose RBAC covers its namespace only: admitted by
    the OPA pods, confirmed by the leading controller pod; then the whole day from the record."""
    with node_platform.tenant_client(cp, f"{TENANT}-dev", TENANT) as tenant:
        for name, cpu, hours, within in CLUSTER_DAY:
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "VmTemplate",
                "metadata": {"name": name},
                "spec": {
                    "vmName": name,
                    "cpu": cpu,
                    "memory": cpu * 2,
                    "duration": f"{hours}h",
                    "maxLatency": 2000,
                    "tenant": TENANT,
                    "originRegion": "westeurope",
                    "deadline": stamp(datetime.now(UTC) + timedelta(hours=within)),
                },
            }
            made = tenant.post(f"/apis/{GROUP}/{VERSION}/namespaces/{TENANT}/vmtemplates", json=body)
            if made.status_code != 201:
                raise GreenOpsError(f"VmTemplate {TENANT}/{name}: {made.status_code} {made.text[:300]}")
    admin = {"Authorization": f"Bearer {installed.admin_token}"}
    with httpx.Client(base_url=installed.url, timeout=30, headers=admin) as s:
        deadline = time.monotonic() + timeout
        while True:
            rows = list(s.get("/reservations", params={"tenant": TENANT, "all": "true"}).json()["reservations"])
            held = [r["key"] for r in rows if r.get("held_until")]
            if not held:
                return rows
            if time.monotonic() > deadline:
                raise GreenOpsError(f"no controller pod confirmed {', '.join(held)} in {timeout:.0f}s")
            time.sleep(1)


def book_day(installed: node_platform.Installed) -> None:
    """The tenant's bookings through the Service, as its CI's Pulumi path makes them."""
    token = issue_credential(installed.url, installed.admin_token, "acme-ci", ["acme"], paths=["pulumi"])
    tenant = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=installed.url, timeout=30) as s:
        now = datetime.now(UTC)
        for name, cpu, hours, within in DAY:
            body = {
                "key": f"acme/{name}",
                "tenant": "acme",
                "path": "pulumi",
                "eligible_regions": ZONES,
                "deadline": stamp(now + timedelta(hours=within)),
                "duration": hours,
                "cpu": cpu,
                "memory": cpu * 2,
            }
            s.post("/scheduling", headers=tenant, json=body).raise_for_status()


def show_pods(console: Console, rows: list[dict[str, str]]) -> None:
    table = Table(title="kubectl get pods -A", box=None)
    for column in ("NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "NODE"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row.values())
    console.print(table)


def show_day(console: Console, rows: list[dict]) -> None:
    table = Table(title="the day, from the record in PostgreSQL", box=None)
    for column in ("PATH", "KEY", "PHASE", "ZONE", "START", "END", "VCPU"):
        table.add_column(column)
    for r in sorted(rows, key=lambda r: (r["path"], r["start"])):
        table.add_row(r["path"], r["key"], r["phase"], r["zone"], r["start"], r["end"], str(r["cpu"]))
    console.print(table)


if __name__ == "__main__":
    from release.run import ReleaseError

    try:
        sys.exit(main())
    except (GreenOpsError, ReleaseError) as exc:  # each names what failed and why
        print(f"demo-node: {exc}", file=sys.stderr)
        sys.exit(1)
