from __future__ import annotations

import pytest

from greenops.local.controlplane import LocalControlPlane
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import install_admission, loopback_tls
from greenops.policies.bundle import build, default_revision
from greenops.policies.config import load_policy_config
from greenops.policies.server import OpaServer
from tests.conftest import require_tool

# A tenant with a small vCPU quota, for the test that fills it from both paths.
THRIFTY_QUOTA_VCPU = 6
# namespace -> its greenops.io/tenant label (None: unlabelled, the default tenant)
NAMESPACES = {"greenops": "greenops", "e2e": "e2e", "acme-ml": "acme", "thrifty-batch": "thrifty", "unlabelled": None}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """etcd + kube-apiserver, the scheduler (4 vCPU per zone-hour), OPA over HTTPS as the webhook,
    the namespaces above copied into OPA as kube-mgmt would."""
    for tool in ("etcd", "kube-apiserver", "opa", "pulumi"):
        require_tool(tool)
    tls = loopback_tls(tmp_path_factory.mktemp("tls"))
    config = load_policy_config()
    config = config.model_copy(update={"tenant_vcpu_quota": {**config.tenant_vcpu_quota, "thrifty": THRIFTY_QUOTA_VCPU}})
    bundle = build(tmp_path_factory.mktemp("bundle") / "policy-bundle.tar.gz", default_revision(), config=config)
    with LocalControlPlane(with_controller_manager=True) as cp, SchedulerServer(capacity_vcpu=4) as sched, \
            OpaServer(scheduler_url=sched.url, tls_cert=tls.cert_file, tls_key=tls.key_file, bundle=bundle) as opa:
        install_admission(cp, opa.url, tls.ca_pem, NAMESPACES)
        yield {"cp": cp, "scheduler": sched, "opa": opa, "tls": tls}
