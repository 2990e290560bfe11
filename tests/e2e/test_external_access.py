"""The prod Pulumi path from outside the cluster, as CI runs it: Placement reaches OPA and the
scheduler through the Ingresses the prod stack declares (greenops:platform.externalAccess), over
TLS it verifies against the CA the stack exports (opaCaCertificate), with both tokens.

What is real: the prod stack's own declarations (evaluated under mocks, with the tls provider's
certificates made for real from their inputs), nginx as the ingress data plane configured from the
declared Ingresses and TLS Secrets (tests/support/ingress.py), OPA with the policy bundle and token
authorization, the scheduler with the prod stack's admin token and its principals file as the
scheduler component declares it (OPA by its token's digest, the cluster path's controller by its
ServiceAccount, reviewed with a local kube-apiserver), a tenant's token issued by that admin, and
Placement's own HTTP clients. What stands in: the
DNS entries for the two host names (pointed at loopback, as /etc/hosts would), and loopback
addresses for the two Services.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.local.controlplane import LocalControlPlane
from greenops.local.opa import OpaServer
from greenops.local.scheduler import SchedulerServer
from greenops.local.webhook import loopback_tls
from greenops.provider.placement import PlacementProvider
from tests.support.common import AZURE_SUBSCRIPTION, require_tool
from tests.support.common import SSH_KEY as KEY
from tests.support.declared import STACK_SECRETS, evaluate_stack
from tests.support.ingress import NginxIngress, nginx_binary

pytestmark = pytest.mark.e2e
QUERY_TOKEN, ADMIN_TOKEN = STACK_SECRETS["greenops:opaToken"], STACK_SECRETS["greenops:opaAdminToken"]
SCHEDULER_ADMIN_TOKEN = STACK_SECRETS["greenops:schedulerAdminToken"]
OPA_AT_SCHEDULER = STACK_SECRETS["greenops:opaSchedulerToken"]


@pytest.fixture(scope="module")
def route(tmp_path_factory):
    for tool in ("opa", "etcd", "kube-apiserver"):
        require_tool(tool)
    if nginx_binary() is None:
        pytest.fail("nginx is not installed: `make ingress` (make test runs it)")
    declared = evaluate_stack("prod")
    ingresses = [o for o in declared.objects if o["kind"] == "Ingress"]
    assert {i["metadata"]["name"] for i in ingresses} == {"greenops-opa", "greenops-scheduler"}
    secrets = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["stringData"]
        for o in declared.objects
        if o["kind"] == "Secret" and o.get("type") == "kubernetes.io/tls"
    }
    ca = declared.mocks.outputs[("tls:index/selfSignedCert:SelfSignedCert", "opa-ca")]["certPem"]
    hosts = {i["metadata"]["name"]: i["spec"]["rules"][0]["host"] for i in ingresses}
    backend_tls = loopback_tls(tmp_path_factory.mktemp("opa-tls"))  # OPA's own serving certificate
    # the principals file the prod stack declares: OPA, by the digest of its token, and the
    # controller's ServiceAccount, which the scheduler reviews with an API server
    [principals] = [o for o in declared.objects if o["kind"] == "ConfigMap" and "principals.yaml" in o.get("data", {})]
    principals_file = tmp_path_factory.mktemp("principals") / "principals.yaml"
    principals_file.write_text(principals["data"]["principals.yaml"])
    with (
        LocalControlPlane() as cp,
        SchedulerServer(
            admin_token=SCHEDULER_ADMIN_TOKEN, principals=principals_file, kubeconfig=cp.kubeconfig_path
        ) as scheduler,
        OpaServer(
            scheduler_url=scheduler.url,
            scheduler_token=OPA_AT_SCHEDULER,
            query_token=QUERY_TOKEN,
            admin_token=ADMIN_TOKEN,
            tls_cert=backend_tls.cert_file,
            tls_key=backend_tls.key_file,
        ) as opa,
    ):
        backends = {
            ("opa", "opa", 443): f"127.0.0.1:{opa.port}",
            ("greenops", "greenops-scheduler", 8080): f"127.0.0.1:{scheduler.port}",
        }
        with NginxIngress(ingresses=ingresses, secrets=secrets, backends=backends) as ingress:
            yield {
                # what the platform's admin issues the CI job of tenant data
                "token": scheduler.issue("data-ci", ["data"], paths=["pulumi"]),
                "opa": f"https://{hosts['greenops-opa']}:{ingress.port}",
                "scheduler": f"https://{hosts['greenops-scheduler']}:{ingress.port}",
                "hosts": set(hosts.values()),
                "ca": ca,
                "port": ingress.port,
            }


@pytest.fixture(autouse=True)
def dns(route, monkeypatch):
    """The two host names resolve to loopback, as DNS pointed at the ingress controller would."""
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        return real("127.0.0.1" if host in route["hosts"] else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def props(route, **over) -> dict:
    deadline = stamp(datetime.now(UTC) + timedelta(days=2))
    return {
        "workload": {
            "name": "from-ci",
            "cpu": 2,
            "memory": 4,
            "duration": "2h",
            "deadline": deadline,
            "originRegion": "westeurope",
            "dataResidency": "eu",
            "tenant": "data",
        },
        "opaUrl": route["opa"],
        "schedulerUrl": route["scheduler"],
        "timeoutSeconds": 5,
        "attempts": 2,
        "opaToken": QUERY_TOKEN,
        "schedulerToken": route["token"],
        "caCertificate": route["ca"],
        "stack": "ci",
        "render": {"sshPublicKey": KEY, "skipAwait": True, "azureSubscriptionId": AZURE_SUBSCRIPTION},
        **over,
    }


def test_placement_places_through_the_ingresses_with_verified_tls_and_both_tokens(route):
    provider = PlacementProvider()
    out = provider.create(props(route)).outs
    assert out["decision"]["zone"] and out["reservation"]["phase"] in ("Scheduled", "Running")
    # The booking is in the scheduler's record, read back through the same route.
    with httpx.Client(verify=_context(route["ca"]), headers={"Authorization": f"Bearer {route['token']}"}) as c:
        r = c.get(f"{route['scheduler']}/reservations")
    assert r.status_code == 200 and out["reservation"]["key"] in {x["key"] for x in r.json()["reservations"]}
    assert {x["tenant"] for x in r.json()["reservations"]} == {"data"}  # its own tenant's, only
    provider.delete("greenvm-from-ci", out)


def test_without_the_platform_ca_the_certificate_is_refused_by_name(route):
    with pytest.raises(GreenOpsError, match=r"certificate verify failed"):
        PlacementProvider().create(props(route, caCertificate=None))


@pytest.mark.parametrize(
    "field, says",
    [
        ("opaToken", r"OPA at https://opa\.greenops\.example\.com:\d+ refused the bearer token \(HTTP 401"),
        ("schedulerToken", r"scheduler refused the request \(HTTP 401\)"),
    ],
)
def test_a_wrong_token_arrives_and_is_refused(route, field, says):
    """The ingress passes the Authorization header through: a wrong token reaches the service and
    is refused there (the Kubernetes API's service proxy would have dropped it)."""
    with pytest.raises(GreenOpsError, match=says):
        PlacementProvider().create(props(route, **{field: "not-the-token"}))


def test_an_unknown_host_name_is_refused_at_the_handshake(route):
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"https://127.0.0.1:{route['port']}/", verify=False)


def _context(ca_pem: str):
    import ssl

    context = ssl.create_default_context()
    context.load_verify_locations(cadata=ca_pem)
    return context


@pytest.mark.parametrize(
    "method, path",
    [
        ("POST", "/"),  # the admission webhook's call: it runs system.main, which calls the scheduler
        ("GET", "/v1/policies"),
        ("PUT", "/v1/policies/evil"),
        ("PUT", "/v1/data/kubernetes/namespaces"),  # kube-mgmt's replicated data
        ("POST", "/v1/data/greenops/admission"),  # a package that books
        ("POST", "/v1/data/system/authz"),
        ("GET", "/health"),
    ],
)
def test_the_ingress_routes_nothing_of_opa_but_its_decision_api(route, method, path):
    """Not a refusal by OPA (which the admin token could pass): the ingress has no route there, and
    answers itself (nginx: 404, or 405 for a write to a path it would serve as a file)."""
    with httpx.Client(verify=_context(route["ca"]), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as c:
        r = c.request(method, f"{route['opa']}{path}", json={})
    assert r.status_code in (404, 405) and "<center>nginx" in r.text, (method, path, r.status_code, r.text[:200])


def test_a_write_under_a_routed_package_reaches_opa_and_is_refused(route):
    with httpx.Client(verify=_context(route["ca"]), headers={"Authorization": f"Bearer {QUERY_TOKEN}"}) as c:
        r = c.put(f"{route['opa']}/v1/data/greenops/placement/injected", json={"allowed": True})
    assert r.status_code == 401 and "may only read greenops decisions" in r.text
