"""PolicyEngine: OPA with the kube-mgmt sidecar, the policy bundle service, webhook TLS and the
MutatingWebhookConfiguration for VmTemplate (thesis §3.5-3.6).

OPA never serves an empty policy: the bundle built from this release (greenops.policies.bundle.pack)
ships in a ConfigMap. Without a bundle service OPA loads it with --bundle; with one, it is copied
into OPA's persistence directory before OPA starts, so OPA boots with it, and the service's newer
revisions replace it as they arrive."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

from components.config import PolicyConfig
from components.scheduler import TOKEN_VARIABLE
from components.secret_env import secret_env
from greenops.policies import ADMIN_TOKEN_VARIABLE, QUERY_TOKEN_VARIABLE
from greenops.policies.bundle import pack
from greenops.policies.webhook import VMTEMPLATE_GROUP, VMTEMPLATE_RESOURCE, VMTEMPLATE_VERSION, webhook_configuration

OPA_PORT = 8443
SERVICE_PORT = 443  # the Service (and the webhook, and an Ingress) reach OPA here
SHIPPED_DIR = "/shipped"  # the release's bundle, from the opa-bundle ConfigMap
PERSIST_DIR = "/var/opa"  # OPA's persistence directory: bundles/<name>/bundle.tar.gz is loaded at boot
BUNDLE_NAME = "greenops"
ADMIN_TOKEN_DIR = "/var/run/secrets/greenops/opa-admin"  # kube-mgmt's --opa-auth-token-file lives here


@dataclass
class PolicyEngineArgs:
    config: PolicyConfig
    opa_image: str
    kube_mgmt_image: str
    bundle_init_image: str = "docker.io/library/busybox:1.37.0"
    vmtemplate_version: str = VMTEMPLATE_VERSION
    scheduler_token: pulumi.Input[str] | None = None  # presented on every call to the scheduler
    # OPA's own API (system.authz): greenops:opaToken for decision queries (Placement's), and
    # greenops:opaAdminToken for kube-mgmt's writes. Both or neither.
    query_token: pulumi.Input[str] | None = None
    admin_token: pulumi.Input[str] | None = None


def opa_config(c: PolicyConfig) -> dict:
    """OPA's own configuration: pull the bundle from its service and hot-reload new revisions."""
    if not c.bundle_service_url:
        return {}
    service: dict = {"url": c.bundle_service_url}
    if c.bundle_service_type == "oci":
        service["type"] = "oci"
    return {
        "services": {"bundles": service},
        "bundles": {
            BUNDLE_NAME: {
                "service": "bundles",
                "resource": c.bundle_resource,
                "persist": True,
                "polling": {"min_delay_seconds": 30, "max_delay_seconds": 120},
            }
        },
        "persistence_directory": PERSIST_DIR,
    }


class PolicyEngine(pulumi.ComponentResource):
    def __init__(self, name: str, args: PolicyEngineArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:PolicyEngine", name, None, opts)
        c = args.config
        ns = c.namespace
        child = pulumi.ResourceOptions(parent=self)
        host = f"opa.{ns}.svc"

        # A CA and a serving certificate kept in state: stable across `up` runs, secret in state.
        self.ca_key = tls.PrivateKey(f"{name}-ca-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
        self.ca = tls.SelfSignedCert(
            f"{name}-ca",
            private_key_pem=self.ca_key.private_key_pem,
            is_ca_certificate=True,
            validity_period_hours=24 * 365 * 5,
            allowed_uses=["cert_signing", "crl_signing"],
            subject=tls.SelfSignedCertSubjectArgs(common_name="greenops-webhook-ca"),
            opts=child,
        )
        self.key = tls.PrivateKey(f"{name}-serving-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
        csr = tls.CertRequest(
            f"{name}-csr",
            private_key_pem=self.key.private_key_pem,
            dns_names=[host, f"{host}.cluster.local", "opa"],
            ip_addresses=["127.0.0.1"],
            subject=tls.CertRequestSubjectArgs(common_name=host),
            opts=child,
        )
        self.cert = tls.LocallySignedCert(
            f"{name}-serving",
            cert_request_pem=csr.cert_request_pem,
            ca_private_key_pem=self.ca_key.private_key_pem,
            ca_cert_pem=self.ca.cert_pem,
            validity_period_hours=24 * 365,
            early_renewal_hours=24 * 30,
            allowed_uses=["server_auth", "digital_signature", "key_encipherment"],
            opts=child,
        )

        self.namespace = k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": ns}, opts=child)
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        self.tls_secret = k8s.core.v1.Secret(
            f"{name}-tls",
            metadata={"name": "opa-server-tls", "namespace": ns},
            type="kubernetes.io/tls",
            string_data={"tls.crt": self.cert.cert_pem, "tls.key": self.key.private_key_pem},
            opts=in_ns,
        )
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata={"name": "opa-config", "namespace": ns},
            data={"config.json": json.dumps(opa_config(c))},
            opts=in_ns,
        )
        bundle, self.bundle_revision = pack()
        self.bundle_map = k8s.core.v1.ConfigMap(
            f"{name}-bundle",
            metadata={"name": "opa-bundle", "namespace": ns},
            binary_data={"bundle.tar.gz": base64.b64encode(bundle).decode()},
            opts=in_ns,
        )

        # Least privilege: kube-mgmt only reads VmTemplates and Namespaces (to replicate them into
        # OPA; a namespace's label greenops.io/tenant is its VmTemplates' tenant).
        token_env = []
        if args.scheduler_token is not None:
            self.scheduler_token, env = secret_env(
                f"{name}-scheduler-token", "greenops-scheduler-token", ns, TOKEN_VARIABLE, args.scheduler_token, in_ns
            )
            token_env.append(env)
        # OPA's API: --authentication=token --authorization=basic with the bundle's system.authz.
        # GET /health and the webhook's POST / stay open; the tokens reach OPA as variables from
        # Secrets, and kube-mgmt reads the admin token from the same Secret mounted as a file.
        auth_args, mgmt_auth_args, mgmt_mounts, token_volumes, token_secrets = [], [], [], [], []
        if (args.query_token is None) != (args.admin_token is None):
            missing = "greenops:opaAdminToken" if args.admin_token is None else "greenops:opaToken"
            raise pulumi.RunError(
                f"{missing} is required too: OPA's API needs both its query token "
                "(greenops:opaToken) and kube-mgmt's admin token (greenops:opaAdminToken)"
            )
        if args.query_token is not None:
            self.query_token, query_env = secret_env(
                f"{name}-query-token", "greenops-opa-query-token", ns, QUERY_TOKEN_VARIABLE, args.query_token, in_ns
            )
            self.admin_token, admin_env = secret_env(
                f"{name}-admin-token", "greenops-opa-admin-token", ns, ADMIN_TOKEN_VARIABLE, args.admin_token, in_ns
            )
            token_env += [query_env, admin_env]
            token_secrets = [self.query_token, self.admin_token]
            auth_args = ["--authentication=token", "--authorization=basic"]
            mgmt_auth_args = [f"--opa-auth-token-file={ADMIN_TOKEN_DIR}/token"]
            mgmt_mounts = [{"name": "opa-admin-token", "mountPath": ADMIN_TOKEN_DIR, "readOnly": True}]
            token_volumes = [
                {
                    "name": "opa-admin-token",
                    "secret": {
                        "secretName": "greenops-opa-admin-token",
                        "items": [{"key": ADMIN_TOKEN_VARIABLE, "path": "token"}],
                    },
                }
            ]
        else:
            pulumi.log.warn(
                "OPA's API is open to every pod that reaches it: set greenops:opaToken and "
                "greenops:opaAdminToken (pulumi config set --secret) to require bearer tokens",
                self,
            )
        self.account = k8s.core.v1.ServiceAccount(f"{name}-sa", metadata={"name": "opa", "namespace": ns}, opts=in_ns)
        self.role = k8s.rbac.v1.ClusterRole(
            f"{name}-replicate",
            metadata={"name": "greenops-opa-replicate"},
            rules=[
                {
                    "apiGroups": [VMTEMPLATE_GROUP],
                    "resources": [VMTEMPLATE_RESOURCE],
                    "verbs": ["get", "list", "watch"],
                },
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
            ],
            opts=child,
        )
        self.binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-replicate",
            metadata={"name": "greenops-opa-replicate"},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "greenops-opa-replicate"},
            subjects=[{"kind": "ServiceAccount", "name": "opa", "namespace": ns}],
            opts=child,
        )

        labels = {"app.kubernetes.io/name": "opa", "app.kubernetes.io/part-of": "greenops"}
        opa_args = [
            "run",
            "--server",
            f"--addr=0.0.0.0:{OPA_PORT}",
            "--tls-cert-file=/certs/tls.crt",
            "--tls-private-key-file=/certs/tls.key",
            "--optimize-store-for-read-speed",
            "--log-format=json",
            *auth_args,
        ]
        opa_mounts = [
            {"name": "certs", "mountPath": "/certs", "readOnly": True},
            {"name": "config", "mountPath": "/config", "readOnly": True},
        ]
        bundle_volumes = [{"name": "shipped-bundle", "configMap": {"name": "opa-bundle"}}]
        init = []
        if c.bundle_service_url:
            opa_args.append("--config-file=/config/config.json")
            target = f"{PERSIST_DIR}/bundles/{BUNDLE_NAME}"
            init = [
                {
                    "name": "shipped-bundle",
                    "image": args.bundle_init_image,
                    "command": [
                        "sh",
                        "-c",
                        f"mkdir -p {target} && cp {SHIPPED_DIR}/bundle.tar.gz {target}/bundle.tar.gz",
                    ],
                    "volumeMounts": [
                        {"name": "shipped-bundle", "mountPath": SHIPPED_DIR, "readOnly": True},
                        {"name": "persist", "mountPath": PERSIST_DIR},
                    ],
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                        "readOnlyRootFilesystem": True,
                        "allowPrivilegeEscalation": False,
                    },
                }
            ]
            opa_mounts.append({"name": "persist", "mountPath": PERSIST_DIR})
            bundle_volumes.append({"name": "persist", "emptyDir": {}})
        else:
            opa_args.append(f"--bundle={SHIPPED_DIR}/bundle.tar.gz")
            opa_mounts.append({"name": "shipped-bundle", "mountPath": SHIPPED_DIR, "readOnly": True})
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-opa",
            metadata={"name": "opa", "namespace": ns, "labels": labels},
            spec={
                "replicas": 2,
                "selector": {"matchLabels": labels},
                # a new policy in the release rolls the pods (OPA does not watch the mounted file)
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {"greenops.io/bundle-revision": self.bundle_revision},
                    },
                    "spec": {
                        "serviceAccountName": "opa",
                        **({"initContainers": init} if init else {}),
                        "containers": [
                            {
                                "name": "opa",
                                "image": args.opa_image,
                                "args": opa_args,
                                "env": [
                                    {"name": "SCHEDULER_URL", "value": c.scheduler_url},
                                    {"name": "GOGC", "value": "400"},
                                    *token_env,
                                ],
                                "ports": [{"name": "https", "containerPort": OPA_PORT}],
                                "readinessProbe": {
                                    "httpGet": {"path": "/health?bundles", "port": OPA_PORT, "scheme": "HTTPS"}
                                },
                                "livenessProbe": {"httpGet": {"path": "/health", "port": OPA_PORT, "scheme": "HTTPS"}},
                                # With authorization on, even /health answers 500 until the bundle brings
                                # system.authz: liveness waits for that (up to 5 minutes) instead of restarting.
                                **(
                                    {
                                        "startupProbe": {
                                            "httpGet": {"path": "/health", "port": OPA_PORT, "scheme": "HTTPS"},
                                            "periodSeconds": 5,
                                            "failureThreshold": 60,
                                        }
                                    }
                                    if auth_args
                                    else {}
                                ),
                                "securityContext": {
                                    "runAsNonRoot": True,
                                    "readOnlyRootFilesystem": True,
                                    "allowPrivilegeEscalation": False,
                                },
                                "volumeMounts": opa_mounts,
                            },
                            {
                                "name": "kube-mgmt",
                                "image": args.kube_mgmt_image,
                                # Same pod: the sidecar talks to OPA over loopback, through OPA's serving cert.
                                "args": [
                                    f"--opa-url=https://127.0.0.1:{OPA_PORT}/v1",
                                    "--opa-allow-insecure",
                                    "--enable-policies=false",
                                    "--enable-data=false",
                                    *mgmt_auth_args,
                                    f"--replicate={VMTEMPLATE_GROUP}/{args.vmtemplate_version}/{VMTEMPLATE_RESOURCE}",
                                    "--replicate-cluster=v1/namespaces",
                                ],
                                **({"volumeMounts": mgmt_mounts} if mgmt_mounts else {}),
                                "securityContext": {
                                    "runAsNonRoot": True,
                                    "readOnlyRootFilesystem": True,
                                    "allowPrivilegeEscalation": False,
                                },
                            },
                        ],
                        "volumes": [
                            {"name": "certs", "secret": {"secretName": "opa-server-tls"}},
                            {"name": "config", "configMap": {"name": "opa-config"}},
                            *bundle_volumes,
                            *token_volumes,
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[self.tls_secret, self.config_map, self.bundle_map, self.binding, *token_secrets],
            ),
        )
        self.service = k8s.core.v1.Service(
            f"{name}-svc",
            metadata={"name": "opa", "namespace": ns, "labels": labels},
            spec={"selector": labels, "ports": [{"name": "https", "port": SERVICE_PORT, "targetPort": OPA_PORT}]},
            opts=in_ns,
        )

        client_config: dict = (
            {"url": c.webhook_url}
            if c.webhook_url
            else {"service": {"name": "opa", "namespace": ns, "path": "/", "port": SERVICE_PORT}}
        )
        hook = webhook_configuration(
            client_config,
            self.ca.cert_pem.apply(lambda pem: base64.b64encode(pem.encode()).decode()),
            c.webhook_timeout_seconds,
            exclude_namespaces=["kube-system", ns],
        )
        self.webhook = k8s.admissionregistration.v1.MutatingWebhookConfiguration(
            f"{name}-webhook",
            metadata=hook["metadata"],
            webhooks=hook["webhooks"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.service]),
        )
        self.register_outputs({"caCert": self.ca.cert_pem, "webhook": self.webhook.metadata["name"]})
