"""The whole cluster path on loopback for the end-to-end suites (etcd + kube-apiserver with its
controller manager, the scheduler, OPA over HTTPS as the webhook, the cluster path's controller,
tenants' namespaces), and a cluster-mode stack on it, run by the real engine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import pytest
import yaml

from greenops.charts.vmplacement import placement_crd
from greenops.engine import automation
from greenops.local.controller import ControllerProcess
from greenops.local.controlplane import LocalControlPlane
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import WebhookAccess, install_admission, loopback_tls
from greenops.policies.bundle import build, default_revision
from greenops.policies.settings import load_policy_settings
from tests.support.common import require_tool
from tests.support.engine import iso, project_with_stack
from tests.support.loopback import set_secrets, stack_secrets, tenants_of

# A tenant with a small vCPU quota, for the test that fills it from both paths.
THRIFTY_QUOTA_VCPU = 6
# namespace -> its greenops.io/tenant label (None: unlabelled, the default tenant)
NAMESPACES = {"greenops": "greenops", "e2e": "e2e", "acme-ml": "acme", "thrifty-batch": "thrifty", "unlabelled": None}


@contextmanager
def webhook_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """etcd + kube-apiserver, the scheduler (4 vCPU per zone-hour), OPA over HTTPS as the webhook,
    the namespaces above copied into OPA as kube-mgmt would."""
    for tool in ("etcd", "kube-apiserver", "opa", "pulumi"):
        require_tool(tool)
    tls = loopback_tls(tmp_path_factory.mktemp("tls"))
    config = load_policy_settings()
    config = config.model_copy(
        update={"tenant_vcpu_quota": {**config.tenant_vcpu_quota, "thrifty": THRIFTY_QUOTA_VCPU}}
    )
    folder = tmp_path_factory.mktemp("bundle")
    bundle = build(folder / "policy-bundle.tar.gz", default_revision(), config=config)
    # one policy: the scheduler reads the tenants' quotas from the same settings the bundle ships
    settings = folder / "policy.yaml"
    settings.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    access = WebhookAccess()
    with (
        LocalControlPlane(with_controller_manager=True, webhook_tokens=access.tokens) as cp,
        SchedulerServer(capacity_vcpu=4, env={"GREENOPS_SCHEDULER_POLICY_CONFIG": str(settings)}) as sched,
    ):
        served = {
            "scheduler_url": sched.url,
            "scheduler_token": sched.issue("opa", None, paths=["cluster"]),  # OPA's principal: the cluster path
            "tls_cert": tls.cert_file,
            "tls_key": tls.key_file,
            "bundle": bundle,
        }
        # the Pulumi program's decisions go to one OPA, the API server's reviews to the webhook's own
        with OpaServer(**served) as opa, access.opa(**served) as webhook:
            install_admission(cp, webhook.url, tls.ca_pem, NAMESPACES, token=webhook.admin_token)
            cp.create_crd(placement_crd())
            # as the platform runs it: it confirms holds and releases on the deletions it observes
            with ControllerProcess(
                scheduler_url=sched.url,
                token=sched.issue("controller", None, paths=["cluster"], role="report"),
                kubeconfig=cp.kubeconfig_path,
                identity="e2e-controller",
                log=folder / "controller.log",
            ) as controller:
                controller.wait_leading()
                yield {"cp": cp, "scheduler": sched, "opa": opa, "webhook": webhook, "tls": tls}


def cluster_stack(
    cluster: dict, tmp_path, name: str, workloads: list[dict], render: dict, now: datetime, readiness: str | None = None
):
    """A cluster-mode stack (CRD stubs installed by the program) on ``cluster``'s API server, OPA and
    scheduler: its project in ``tmp_path/project``, its state beside it, its clock at ``now``, each
    workload's tenant token and OPA's query token set as secrets; ``readiness`` as
    greenops:kubernetes sets it (the default: the operator's). Returns the stack and ``reconcile(at)``,
    which runs `up` at another clock."""
    kubernetes = {"mode": "cluster", "installCrdStubs": True, **({"readiness": readiness} if readiness else {})}
    endpoints = {"opaUrl": cluster["opa"].url, "schedulerUrl": cluster["scheduler"].url}
    config = {"workloads": workloads, "endpoints": endpoints, "kubernetes": kubernetes, "render": render}
    project = project_with_stack(tmp_path / "project", name, config)
    (tmp_path / "state").mkdir()
    env = {"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "GREENOPS_NOW": iso(now)}
    if "tls" in cluster:  # OPA over HTTPS: the engine trusts the webhook's CA
        (tmp_path / "ca.pem").write_bytes(cluster["tls"].ca_pem)
        env["SSL_CERT_FILE"] = str(tmp_path / "ca.pem")
    st = automation.stack(name, work_dir=project, env=env)
    st.set_config(
        "greenops:kubeconfig", automation.auto.ConfigValue(cluster["cp"].kubeconfig_path.read_text(), secret=True)
    )
    set_secrets(st, stack_secrets(cluster["scheduler"], cluster["opa"], tenants_of(workloads)))

    def reconcile(at: datetime) -> None:
        st.workspace.env_vars["GREENOPS_NOW"] = iso(at)
        automation.run(st, "up", stream=False)

    return st, reconcile
