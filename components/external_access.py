"""ExternalAccess: OPA and the scheduler behind one Ingress each, for a Pulumi path that runs outside
the cluster (CI through the Automation API). See components.platform_config.ExternalAccessConfig."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

from components.platform_config import ExternalAccessConfig
from greenops.policies import DECISION_API_PATHS

TLS_SECRET = "greenops-external-tls"


@dataclass
class Backend:
    """One Service the Ingress routes to, in its own namespace: only ``paths`` (prefixes)."""

    namespace: pulumi.Input[str]
    service: str
    port: int
    paths: tuple[str, ...] = ("/",)


def opa_backend(namespace: pulumi.Input[str], service: str, port: int) -> Backend:
    """OPA's decision API only: the packages a query token may read. Never ``/`` (the admission
    webhook's POST /, which calls the scheduler and books), never /v1/policies, and nothing else
    under /v1/data (writes there need kube-mgmt's admin token, and the greenops root is the
    bundle's, which OPA keeps read-only)."""
    return Backend(namespace, service, port, DECISION_API_PATHS)


@dataclass
class ExternalAccessArgs:
    config: ExternalAccessConfig
    opa: Backend
    scheduler: Backend
    # The platform's CA (PolicyEngine's): the one certificate a workloads stack already trusts.
    ca_key_pem: pulumi.Input[str]
    ca_cert_pem: pulumi.Input[str]


class ExternalAccess(pulumi.ComponentResource):
    opa_url: pulumi.Output[str]
    scheduler_url: pulumi.Output[str]

    def __init__(self, name: str, args: ExternalAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:ExternalAccess", name, None, opts)
        c = args.config
        child = pulumi.ResourceOptions(parent=self)
        hosts = [c.opa_host, c.scheduler_host]
        key = tls.PrivateKey(f"{name}-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
        csr = tls.CertRequest(
            f"{name}-csr",
            private_key_pem=key.private_key_pem,
            dns_names=hosts,
            subject=tls.CertRequestSubjectArgs(common_name=c.opa_host),
            opts=child,
        )
        cert = tls.LocallySignedCert(
            f"{name}-cert",
            cert_request_pem=csr.cert_request_pem,
            ca_private_key_pem=args.ca_key_pem,
            ca_cert_pem=args.ca_cert_pem,
            validity_period_hours=24 * 365,
            early_renewal_hours=24 * 30,
            allowed_uses=["digital_signature", "key_encipherment", "server_auth"],
            opts=child,
        )
        self.ingresses = [
            self._route(
                name,
                "opa",
                c.opa_host,
                args.opa,
                {**c.annotations, **c.opa_backend_annotations},
                cert.cert_pem,
                key.private_key_pem,
                c,
            ),
            self._route(
                name,
                "scheduler",
                c.scheduler_host,
                args.scheduler,
                dict(c.annotations),
                cert.cert_pem,
                key.private_key_pem,
                c,
            ),
        ]
        self.opa_url = pulumi.Output.from_input(f"https://{c.opa_host}")
        self.scheduler_url = pulumi.Output.from_input(f"https://{c.scheduler_host}")
        self.register_outputs({"opaUrl": self.opa_url, "schedulerUrl": self.scheduler_url})

    def _route(
        self,
        name: str,
        part: str,
        host: str,
        backend: Backend,
        annotations: dict[str, str],
        cert_pem: pulumi.Input[str],
        key_pem: pulumi.Input[str],
        c: ExternalAccessConfig,
    ) -> k8s.networking.v1.Ingress:
        # An Ingress reads its TLS Secret from its own namespace, so each backend's gets a copy.
        secret = k8s.core.v1.Secret(
            f"{name}-{part}-tls",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=TLS_SECRET, namespace=backend.namespace),
            type="kubernetes.io/tls",
            string_data={"tls.crt": cert_pem, "tls.key": key_pem},
            opts=pulumi.ResourceOptions(parent=self),
        )
        routes = [
            k8s.networking.v1.HTTPIngressPathArgs(
                path=path,
                path_type="Prefix",  # the path and what lies under it, element by element
                backend=k8s.networking.v1.IngressBackendArgs(
                    service=k8s.networking.v1.IngressServiceBackendArgs(
                        name=backend.service, port=k8s.networking.v1.ServiceBackendPortArgs(number=backend.port)
                    )
                ),
            )
            for path in backend.paths
        ]
        return k8s.networking.v1.Ingress(
            f"{name}-{part}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"greenops-{part}", namespace=backend.namespace, annotations=annotations or None
            ),
            spec=k8s.networking.v1.IngressSpecArgs(
                # unset: the cluster's default IngressClass
                ingress_class_name=c.ingress_class_name or None,
                tls=[k8s.networking.v1.IngressTLSArgs(hosts=[host], secret_name=TLS_SECRET)],
                rules=[
                    k8s.networking.v1.IngressRuleArgs(
                        host=host, http=k8s.networking.v1.HTTPIngressRuleValueArgs(paths=routes)
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[secret]),
        )
