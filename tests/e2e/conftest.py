from __future__ import annotations

import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import loopback_tls, vmtemplate_crd, webhook_configuration
from greenops.policies.server import OpaServer
from tests.conftest import require_tool


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """etcd + kube-apiserver, the scheduler (4 vCPU per zone-hour), OPA over HTTPS as the webhook."""
    for tool in ("etcd", "kube-apiserver", "opa", "pulumi"):
        require_tool(tool)
    tls = loopback_tls(tmp_path_factory.mktemp("tls"))
    with LocalControlPlane() as cp, SchedulerServer(capacity_vcpu=4) as sched, \
            OpaServer(scheduler_url=sched.url, tls_cert=tls.cert_file, tls_key=tls.key_file) as opa:
        cp.create_crd(vmtemplate_crd())
        with cp.client() as k:
            k.post("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                   json=webhook_configuration(opa.url, tls.ca_pem)).raise_for_status()
            for ns in ("greenops", "e2e"):
                k.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        yield {"cp": cp, "scheduler": sched, "opa": opa, "tls": tls}
