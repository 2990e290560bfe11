from __future__ import annotations

import shutil

import pytest
import yaml

from greenops.common.toolpaths import REPO
from greenops.engine import automation
from greenops.local.controlplane import LocalControlPlane
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import install_admission, loopback_tls
from greenops.policies.bundle import build, default_revision
from greenops.policies.settings import load_policy_settings
from tests.conftest import require_tool
from tests.engine import iso
from tests.loopback import set_secrets, stack_secrets, tenants_of

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
    config = load_policy_settings()
    config = config.model_copy(
        update={"tenant_vcpu_quota": {**config.tenant_vcpu_quota, "thrifty": THRIFTY_QUOTA_VCPU}}
    )
    folder = tmp_path_factory.mktemp("bundle")
    bundle = build(folder / "policy-bundle.tar.gz", default_revision(), config=config)
    # one policy: the scheduler reads the tenants' quotas from the same settings the bundle ships
    settings = folder / "policy.yaml"
    settings.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    with (
        LocalControlPlane(with_controller_manager=True) as cp,
        SchedulerServer(capacity_vcpu=4, env={"GREENOPS_SCHEDULER_POLICY_CONFIG": str(settings)}) as sched,
        OpaServer(
            scheduler_url=sched.url,
            scheduler_token=sched.issue("opa", None, paths=["cluster"]),  # OPA's principal: the cluster path
            tls_cert=tls.cert_file,
            tls_key=tls.key_file,
            bundle=bundle,
        ) as opa,
    ):
        install_admission(cp, opa.url, tls.ca_pem, NAMESPACES, token=opa.admin_token)
        yield {"cp": cp, "scheduler": sched, "opa": opa, "tls": tls}


def cluster_stack(cluster, tmp_path, name: str, workloads: list[dict], render: dict, now):
    """A cluster-mode stack (operators watched, CRD stubs installed by the program) on the module's
    API server, OPA and scheduler: its project in ``tmp_path/project``, its state beside it, its
    clock at ``now``. Returns the stack and ``reconcile(at)``, which runs `up` at another clock."""
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    shutil.copy2(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "greenops:workloads": workloads,
                    "greenops:endpoints": {"opaUrl": cluster["opa"].url, "schedulerUrl": cluster["scheduler"].url},
                    "greenops:kubernetes": {
                        "mode": "cluster",
                        "installCrdStubs": True,
                    },  # readiness: operator (the default)
                    "greenops:render": render,
                }
            }
        )
    )
    (tmp_path / "state").mkdir()
    (tmp_path / "ca.pem").write_bytes(cluster["tls"].ca_pem)
    env = {
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "SSL_CERT_FILE": str(tmp_path / "ca.pem"),
        "GREENOPS_NOW": iso(now),
    }
    st = automation.stack(name, work_dir=project, env=env)
    st.set_config(
        "greenops:kubeconfig", automation.auto.ConfigValue(cluster["cp"].kubeconfig_path.read_text(), secret=True)
    )
    # each workload's tenant token at the scheduler, and OPA's query token
    set_secrets(st, stack_secrets(cluster["scheduler"], cluster["opa"], tenants_of(workloads)))

    def reconcile(at) -> None:
        st.workspace.env_vars["GREENOPS_NOW"] = iso(at)
        automation.run(st, "up", stream=False)

    return st, reconcile
