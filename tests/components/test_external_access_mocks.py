"""externalAccess: one Ingress per service, TLS from the platform's CA for both host names, the
tokens untouched; refused by name when it cannot route. tests/e2e/test_external_access.py drives
the declared routes through a real ingress data plane."""

from __future__ import annotations

import pulumi
import pytest

from tests.components.test_platform_mocks import PROD, collect, of, run_platform, unwrap

ACCESS = {"enabled": True, "opaHost": "opa.green.example.com", "schedulerHost": "scheduler.green.example.com"}


def test_each_service_gets_an_ingress_on_its_own_host_with_tls():
    m = collect(
        {
            **PROD,
            "externalAccess": {
                **ACCESS,
                "ingressClassName": "nginx",
                "annotations": {"nginx.ingress.kubernetes.io/whitelist-source-range": "203.0.113.0/24"},
            },
        }
    )
    ingresses = {r.inputs["metadata"]["name"]: r.inputs for r in of(m, "kubernetes:networking.k8s.io/v1:Ingress")}
    assert set(ingresses) == {"greenops-opa", "greenops-scheduler"}
    opa, scheduler = ingresses["greenops-opa"], ingresses["greenops-scheduler"]
    assert opa["metadata"]["namespace"] == "opa" and scheduler["metadata"]["namespace"] == "greenops"
    for ingress, host in ((opa, ACCESS["opaHost"]), (scheduler, ACCESS["schedulerHost"])):
        assert ingress["spec"]["ingressClassName"] == "nginx"
        assert ingress["spec"]["tls"] == [{"hosts": [host], "secretName": "greenops-external-tls"}]
        assert [r["host"] for r in ingress["spec"]["rules"]] == [host]
        assert (
            ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"] == "203.0.113.0/24"
        )
    backend = lambda i: i["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]  # noqa: E731
    assert backend(opa) == {"name": "opa", "port": {"number": 443}}  # OPA's Service, as the webhook calls it
    assert backend(scheduler) == {"name": "greenops-scheduler", "port": {"number": 8080}}
    # OPA serves TLS only: the controller must speak HTTPS to it; the scheduler's backend is plain HTTP.
    assert opa["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"] == "HTTPS"
    assert "nginx.ingress.kubernetes.io/backend-protocol" not in scheduler["metadata"]["annotations"]
    # One certificate for both names, signed by the CA a workloads stack already trusts (PolicyEngine's).
    [csr] = [r for r in of(m, "tls:index/certRequest:CertRequest") if r.name == "external-csr"]
    assert csr.inputs["dnsNames"] == [ACCESS["opaHost"], ACCESS["schedulerHost"]]
    [cert] = [r for r in of(m, "tls:index/locallySignedCert:LocallySignedCert") if r.name == "external-cert"]
    assert "server_auth" in cert.inputs["allowedUses"]
    secrets = [r for r in of(m, "kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "greenops-external-tls"]
    assert sorted(s.inputs["metadata"]["namespace"] for s in secrets) == ["greenops", "opa"]
    assert all(unwrap(s.inputs["stringData"])["tls.key"] for s in secrets)


def test_it_is_off_unless_asked():
    assert not of(collect(PROD), "kubernetes:networking.k8s.io/v1:Ingress")


@pytest.mark.parametrize(
    "access, message",
    [
        ({"enabled": True}, r"greenops:platform\.externalAccess: enabled: true needs opaHost and schedulerHost"),
        (
            {**ACCESS, "schedulerHost": ACCESS["opaHost"]},
            r"opaHost and schedulerHost are both 'opa\.green\.example\.com'",
        ),
        (
            {**ACCESS, "opaHost": "https://opa.example.com"},
            r"greenops:platform\.externalAccess\.opaHost: String should match",
        ),
    ],
)
def test_a_route_that_cannot_work_is_refused_by_name(access, message):
    from greenops.stack import program

    run_platform({**PROD, "externalAccess": access})
    with pytest.raises(pulumi.RunError, match=message):
        program.run()


def test_routes_need_their_backends():
    from greenops.stack import program

    run_platform({**PROD, "scheduler": {"enabled": False}, "externalAccess": ACCESS})
    with pytest.raises(
        pulumi.RunError,
        match=r"greenops:platform\.externalAccess: externalAccess routes to OPA and the "
        r"scheduler, and this stack turns off scheduler",
    ):
        program.run()
