from __future__ import annotations

import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import install_admission, loopback_tls
from greenops.policies.server import OpaServer
from tests.conftest import require_tool


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """etcd + kube-apiserver, the scheduler (4 vCPU per zone-hour), OPA over HTTPS as the webhook."""
    for tool in ("etcd", "kube-apiserver", "opa", "pulumi"):
        require_tool(tool)
    tls = loopback_tls(tmp_path_factory.mktemp("tls"))
    with LocalControlPlane(with_controller_manager=True) as cp, SchedulerServer(capacity_vcpu=4) as sched, \
            OpaServer(scheduler_url=sched.url, tls_cert=tls.cert_file, tls_key=tls.key_file) as opa:
        install_admission(cp, opa.url, tls.ca_pem, ("greenops", "e2e"))
        yield {"cp": cp, "scheduler": sched, "opa": opa, "tls": tls}
