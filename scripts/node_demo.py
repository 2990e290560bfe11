#!/usr/bin/env python3
"""The platform on a real node here, for a newcomer: `make demo-node` (as root).

It builds the greenops and PostgreSQL images (the release's own builders), pushes them to a
registry on loopback, and starts etcd, kube-apiserver, the controller manager, kube-scheduler and a
real node (containerd, runc, a kubelet, kube-proxy, CoreDNS). It starts PostgreSQL in a pod, then
`pulumi up` installs the scheduler from its image pinned by digest. A tenant books a day of
workloads through the scheduler's Service. Printed at the end: every pod as `kubectl get pods -A`
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

ROOT = Path(__file__).resolve().parents[1]
# the release tooling (not in the wheel) from the checkout this script belongs to
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# a day of one tenant's batch work: (name, vCPUs, hours, hours until its deadline), over four EU zones
DAY = [("etl", 4, 2, 12), ("train", 8, 4, 20), ("report", 2, 1, 6), ("backfill", 4, 3, 24), ("index", 2, 2, 10)]
ZONES = ["FR", "DE", "PL", "NL"]


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
        console.print("building the greenops and PostgreSQL images ...")
        manifest = steps.build(work / "release", only=["greenops", "postgresql"])
        console.print(f"  built in {time.monotonic() - began:.0f}s")
        with registry.local_registry(work / "registry") as host:
            refs = {name: registry.push_pinned(entry, host, name) for name, entry in manifest["images"].items()}
            console.print("starting the control plane and the node ...")
            with LocalControlPlane(with_node=True) as cp, LocalNode(cp) as node:
                node.trust_registry(host)
                database = node_platform.start_postgresql(cp, refs["postgresql"])
                console.print("pulumi up: the scheduler, two replicas, on PostgreSQL in a pod ...")
                installed = node_platform.install(cp, work / "stack", node_platform.stack_config(refs, 64), database)
                console.print(f"  installed in {installed.seconds:.0f}s")
                rows = day(installed)
                show_pods(console, node_platform.pods_table(cp))
                show_day(console, rows)
    return 0


def day(installed: node_platform.Installed) -> list[dict]:
    """The tenant's bookings through the Service, then the record read back from the scheduler pods."""
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
        listed = s.get("/reservations", headers=tenant, params={"tenant": "acme"})
        listed.raise_for_status()
        return list(listed.json()["reservations"])


def show_pods(console: Console, rows: list[dict[str, str]]) -> None:
    table = Table(title="kubectl get pods -A", box=None)
    for column in ("NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "NODE"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row.values())
    console.print(table)


def show_day(console: Console, rows: list[dict]) -> None:
    table = Table(title="the day, from the record in PostgreSQL", box=None)
    for column in ("KEY", "PHASE", "ZONE", "START", "END", "VCPU"):
        table.add_column(column)
    for r in sorted(rows, key=lambda r: r["start"]):
        table.add_row(r["key"], r["phase"], r["zone"], r["start"], r["end"], str(r["cpu"]))
    console.print(table)


if __name__ == "__main__":
    from release.run import ReleaseError

    try:
        sys.exit(main())
    except (GreenOpsError, ReleaseError) as exc:  # each names what failed and why
        print(f"demo-node: {exc}", file=sys.stderr)
        sys.exit(1)
