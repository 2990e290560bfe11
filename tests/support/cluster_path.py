"""The cluster path on real servers: etcd + kube-apiserver, the scheduler (short holds), OPA as
the admission webhook with its own principal, and a report-role token for the controller; a
VmTemplate as a tenant writes one, and the controller as a process against it all."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from greenops.charts.vmplacement import placement_crd
from greenops.common.clock import stamp
from greenops.local.controller import ControllerProcess
from greenops.local.controlplane import LocalControlPlane
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import GROUP, VERSION, WebhookAccess, install_admission, loopback_tls
from tests.support.bookings import booking
from tests.support.common import require_tool

HOLD_SECONDS = 5


NAMESPACES = {"team-a": "team-a", "team-b": "team-b"}


@dataclass
class Cluster:
    cp: LocalControlPlane
    sched: SchedulerServer
    opa: OpaServer
    opa_token: str
    controller_token: str
    ca_pem: bytes

    def path(self, ns: str, name: str = "") -> str:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/vmtemplates" + (f"/{name}" if name else "")

    def reservation(self, key: str) -> dict | None:
        r = httpx.get(f"{self.sched.url}/reservations/{key}", headers=self.sched.admin_headers, timeout=10)
        return None if r.status_code == 404 else r.json()

    def hold_never_stored(self, tenant: str, name: str = "never-stored") -> str:
        """What a forged or abandoned CREATE leaves: a hold booked with OPA's principal under a fresh
        request uid, for a VmTemplate the API server never stores. Its key."""
        key = f"{tenant}/{name}/{uuid.uuid4()}"
        r = httpx.put(
            f"{self.sched.url}/reservations/{key}",
            json=booking(tenant=tenant, path="cluster"),
            headers={"Authorization": f"Bearer {self.opa_token}"},
            timeout=15,
        )
        assert r.status_code == 200, r.text
        return key

    def wait(self, key: str, predicate, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        row = None
        while time.monotonic() < deadline:
            row = self.reservation(key)
            if row is not None and predicate(row):
                return row
            time.sleep(0.2)
        raise AssertionError(f"reservation {key} did not get there within {timeout}s: {row}")


def template(name: str, tenant: str, **spec) -> dict:
    base = {
        "vmName": name,
        "cpu": 2,
        "memory": 4,
        "duration": "1h",
        "maxLatency": 2000,
        "tenant": tenant,
        "originRegion": "westeurope",
        "deadline": stamp(datetime.now(UTC) + timedelta(days=3)),
    }
    base.update(spec)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VmTemplate", "metadata": {"name": name}, "spec": base}


@contextmanager
def cluster_path(workdir: Path) -> Iterator[Cluster]:
    """The servers of the cluster path, up until the block ends (``workdir``: the webhook's TLS)."""
    for tool in ("etcd", "kube-apiserver", "opa"):
        require_tool(tool)
    tls = loopback_tls(workdir)
    env = {"GREENOPS_SCHEDULER_HOLD_SECONDS": str(HOLD_SECONDS)}
    access = WebhookAccess()  # the cluster path's OPA is the webhook's: only the API server's token
    with (
        LocalControlPlane(with_controller_manager=True, webhook_tokens=access.tokens) as cp,
        SchedulerServer(env=env) as sched,
    ):
        opa_token = sched.issue("opa", None, paths=["cluster"])
        controller_token = sched.issue("controller", None, paths=["cluster"], role="report")
        with access.opa(
            scheduler_url=sched.url, scheduler_token=opa_token, tls_cert=tls.cert_file, tls_key=tls.key_file
        ) as opa:
            install_admission(cp, opa.url, tls.ca_pem, NAMESPACES, token=opa.admin_token)
            cp.create_crd(placement_crd())  # the controller's own, as components/controller.py installs it
            yield Cluster(cp, sched, opa, opa_token, controller_token, tls.ca_pem)


def controller_process(cluster: Cluster, tmp_path, name: str, **kw) -> ControllerProcess:
    """The controller as a process against ``cluster``, with its report-role token; ``kw`` sets
    ControllerProcess's other fields (resync_seconds, clock_file, ...)."""
    return ControllerProcess(
        scheduler_url=cluster.sched.url,
        token=cluster.controller_token,
        kubeconfig=cluster.cp.kubeconfig_path,
        identity=name,
        log=tmp_path / f"{name}.log",
        **kw,
    )
