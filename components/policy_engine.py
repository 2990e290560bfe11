"""PolicyEngine: OPA with the kube-mgmt sidecar, the policy bundle service, webhook TLS and the
MutatingWebhookConfiguration for VmTemplate (thesis §3.5-3.6).

Two OPA processes in each pod, because one `opa run` serves its whole API on every address it
listens on: "opa" answers decision queries (OPA_PORT; Placement's, through the Ingress), and
"opa-webhook" answers the API server's admission reviews (WEBHOOK_PORT) and nothing else, only to
the bearer token the API server presents through its admission kubeconfig (the output
``apiServerAdmissionKubeconfig``; see docs/security.md). kube-mgmt replicates the namespaces into
the webhook's process, the only one whose policy reads them.

OPA never serves an empty policy: the bundle built from this release (greenops.policies.bundle.pack)
ships in a ConfigMap. Without a bundle service OPA loads it with --bundle; with one, it is copied
into OPA's persistence directory before OPA starts, so OPA boots with it, and the service's newer
revisions replace it as they arrive."""

from __future__ import annotations

import base64
import json
import urllib.parse
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

from components.hardening import (
    Resources,
    container_security_context,
    digest_skips,
    pod_security_context,
    pull_policy,
    restricted_namespace,
    scanner_skips,
)
from components.platform_config import PolicyEngineConfig
from components.scheduler import TOKEN_VARIABLE
from components.secret_env import secret_env
from greenops.observability.tracing import opa_distributed_tracing
from greenops.policies import (
    ADMIN_TOKEN_VARIABLE,
    DECISION_LOG_FLAGS,
    METRICS_TOKEN_VARIABLE,
    QUERY_TOKEN_VARIABLE,
    SERVES_VARIABLE,
    WEBHOOK_TOKEN_VARIABLE,
    metrics_token,
    webhook_token,
)
from greenops.policies.bundle import pack
from greenops.policies.webhook import (
    VMTEMPLATE_GROUP,
    VMTEMPLATE_RESOURCE,
    VMTEMPLATE_VERSION,
    webhook_configuration,
    webhook_kubeconfig,
)

OPA_PORT = 8443  # OPA's API: decision queries (Placement, through the Ingress) and kube-mgmt
SERVICE_PORT = 443  # the Service (and an Ingress) reach OPA's API here
# The webhook's own OPA process, for the API server's admission calls (POST /) only: system.authz
# serves nothing else there, and the NetworkPolicy admits only the API server to this port.
WEBHOOK_PORT = 8444
KUBE_MGMT_UNPROBED = (
    "kube-mgmt serves no endpoint to probe; it exits when it loses OPA or the API server and the kubelet "
    "restarts it; OPA itself has liveness and readiness probes"
)
MGMT_RESOURCES = Resources(cpu="50m", memory="128Mi", cpu_limit="250m")
INIT_RESOURCES = Resources(cpu="10m", memory="32Mi", cpu_limit="100m")
# OPA reads its API tokens and the scheduler's token in Rego (opa.runtime().env: authz.rego,
# scheduler.rego): it has no way to read them from a file, so they stay variables from Secrets.
SECRETS_IN_ENV = (
    "OPA reads its API tokens and the scheduler token in Rego through opa.runtime().env; Rego cannot "
    "read a file; the values come from Secrets through secretKeyRef"
)
SHIPPED_DIR = "/shipped"  # the release's bundle, from the opa-bundle ConfigMap
CONFIG_ARG = "--config-file=/config/config.json"  # the opa-config ConfigMap
PERSIST_DIR = "/var/opa"  # OPA's persistence directory: bundles/<name>/bundle.tar.gz is loaded at boot
BUNDLE_NAME = "greenops"
ADMIN_TOKEN_DIR = "/var/run/secrets/greenops/opa-admin"  # kube-mgmt's --opa-auth-token-file lives here
ADMIN_TOKEN_VOLUME = "opa-admin-token"
METRICS_TOKEN_SECRET = "greenops-opa-metrics-token"  # key GREENOPS_OPA_METRICS_TOKEN: GET /metrics's bearer token
WEBHOOK_TOKEN_SECRET = "greenops-opa-webhook-token"  # key GREENOPS_OPA_WEBHOOK_TOKEN: the API server's
LABELS = {"app.kubernetes.io/name": "opa", "app.kubernetes.io/part-of": "greenops"}


@dataclass
class PolicyEngineArgs:
    config: PolicyEngineConfig
    opa_image: str
    kube_mgmt_image: str
    bundle_init_image: str  # versions.yaml's bundle_init_image
    vmtemplate_version: str = VMTEMPLATE_VERSION
    scheduler_token: pulumi.Input[str] | None = None  # presented on every call to the scheduler
    # OPA's own API (system.authz): greenops:opaToken for decision queries (Placement's), and
    # greenops:opaAdminToken for kube-mgmt's writes. Both or neither.
    query_token: pulumi.Input[str] | None = None
    admin_token: pulumi.Input[str] | None = None
    serving_key: pulumi.Input[str] | None = None  # greenops:opaServingKey, with the config's servingCert
    otlp_endpoint: str | None = None  # greenops:platform.otlpEndpoint


def opa_config(c: PolicyEngineConfig, otlp_endpoint: str | None = None) -> dict:
    """OPA's own configuration: pull the bundle from its service and hot-reload new revisions, and
    export its decision spans (children of the traceparent a caller sends) when an OTLP endpoint is set."""
    tracing = {"distributed_tracing": opa_distributed_tracing(otlp_endpoint)} if otlp_endpoint else {}
    if not c.bundle_service_url:
        return tracing
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
        **tracing,
    }


@dataclass(frozen=True)
class ServingIdentity:
    cert_pem: pulumi.Input[str]
    key_pem: pulumi.Input[str]


@dataclass
class ApiTokens:
    """What OPA's API tokens add to the pod: OPA's flags and variables, and kube-mgmt's token file.
    Never empty: without both tokens the component refuses to be declared."""

    secrets: list[k8s.core.v1.Secret] = field(default_factory=list)
    env: list[k8s.core.v1.EnvVarArgs] = field(default_factory=list)
    webhook_env: list[k8s.core.v1.EnvVarArgs] = field(default_factory=list)  # the webhook's process only
    opa_args: list[str] = field(default_factory=list)
    mgmt_args: list[str] = field(default_factory=list)
    mgmt_mounts: list[k8s.core.v1.VolumeMountArgs] = field(default_factory=list)
    volumes: list[k8s.core.v1.VolumeArgs] = field(default_factory=list)


@dataclass
class BundleSource:
    """How OPA gets the policy bundle shipped with the release: from its persistence directory,
    filled by an init container, when a bundle service sends newer ones; else straight from the
    ConfigMap with --bundle."""

    # OPA's --bundle is a switch ("load the paths as bundles"), the paths come after every flag
    opa_args: tuple[str, ...]
    mounts: dict[str, k8s.core.v1.VolumeMountArgs]  # by OPA container: each persists bundles apart
    volumes: list[k8s.core.v1.VolumeArgs]
    init: list[k8s.core.v1.ContainerArgs]


def _mount(name: str, path: str, read_only: bool | None = None) -> k8s.core.v1.VolumeMountArgs:
    return k8s.core.v1.VolumeMountArgs(name=name, mount_path=path, read_only=read_only)


def _health(
    path: str, port: int, period_seconds: int | None = None, failure_threshold: int | None = None
) -> k8s.core.v1.ProbeArgs:
    return k8s.core.v1.ProbeArgs(
        http_get=k8s.core.v1.HTTPGetActionArgs(path=path, port=port, scheme="HTTPS"),
        period_seconds=period_seconds,
        failure_threshold=failure_threshold,
    )


def bundle_source(c: PolicyEngineConfig, init_image: str) -> BundleSource:
    shipped = k8s.core.v1.VolumeArgs(
        name="shipped-bundle", config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name="opa-bundle")
    )
    if not c.bundle_service_url:
        shared = _mount("shipped-bundle", SHIPPED_DIR, read_only=True)
        return BundleSource(
            opa_args=("--bundle", f"{SHIPPED_DIR}/bundle.tar.gz"),
            mounts={name: shared for name in OPA_CONTAINERS},
            volumes=[shipped],
            init=[],
        )
    # each OPA process persists the bundles it downloads in a directory of its own: two writers of
    # one file could leave either a torn copy to boot from
    persist = {name: f"persist-{name}" for name in OPA_CONTAINERS}
    target = f"bundles/{BUNDLE_NAME}"
    copies = " && ".join(
        f"mkdir -p /{volume}/{target} && cp {SHIPPED_DIR}/bundle.tar.gz /{volume}/{target}/bundle.tar.gz"
        for volume in persist.values()
    )
    copy = k8s.core.v1.ContainerArgs(
        name="shipped-bundle",
        image=init_image,
        command=["sh", "-c", copies],
        image_pull_policy=pull_policy(init_image),
        volume_mounts=[
            _mount("shipped-bundle", SHIPPED_DIR, read_only=True),
            *(_mount(volume, f"/{volume}") for volume in persist.values()),
        ],
        resources=INIT_RESOURCES.args(),
        security_context=container_security_context(),
    )
    return BundleSource(
        opa_args=(CONFIG_ARG,),
        mounts={name: _mount(volume, PERSIST_DIR) for name, volume in persist.items()},
        volumes=[
            shipped,
            *(
                k8s.core.v1.VolumeArgs(name=volume, empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs())
                for volume in persist.values()
            ),
        ],
        init=[copy],
    )


OPA_CONTAINERS = ("opa", "opa-webhook")  # the decisions' process and the webhook's


def opa_container(
    args: PolicyEngineArgs,
    tokens: ApiTokens,
    bundle: BundleSource,
    scheduler_env: list[k8s.core.v1.EnvVarArgs],
    webhook: bool = False,
) -> k8s.core.v1.ContainerArgs:
    """One OPA process: the decisions' (OPA_PORT), or with ``webhook`` the webhook's (WEBHOOK_PORT),
    which alone holds the webhook token and serves admission reviews."""
    name, port = ("opa-webhook", WEBHOOK_PORT) if webhook else ("opa", OPA_PORT)
    serves = k8s.core.v1.EnvVarArgs(name=SERVES_VARIABLE, value="webhook" if webhook else "decisions")
    return k8s.core.v1.ContainerArgs(
        name=name,
        image=args.opa_image,
        image_pull_policy=pull_policy(args.opa_image),
        args=[
            "run",
            "--server",
            f"--addr=0.0.0.0:{port}",
            "--tls-cert-file=/certs/tls.crt",
            "--tls-private-key-file=/certs/tls.key",
            "--optimize-store-for-read-speed",
            "--log-format=json",
            *DECISION_LOG_FLAGS,  # on stdout, masked by the bundle's system.log
            *tokens.opa_args,
            # the configuration is read for the bundle service, else for tracing alone
            *([CONFIG_ARG] if args.otlp_endpoint and CONFIG_ARG not in bundle.opa_args else []),
            *bundle.opa_args,
        ],
        env=[
            k8s.core.v1.EnvVarArgs(name="SCHEDULER_URL", value=args.config.scheduler_url),
            k8s.core.v1.EnvVarArgs(name="GOGC", value="400"),
            serves,
            *scheduler_env,
            *tokens.env,
            *(tokens.webhook_env if webhook else []),
        ],
        ports=[k8s.core.v1.ContainerPortArgs(name="webhook" if webhook else "https", container_port=port)],
        readiness_probe=_health("/health?bundles", port),
        liveness_probe=_health("/health", port),
        # With authorization on, even /health answers 500 until the bundle brings system.authz:
        # liveness waits for that (up to 5 minutes) instead of restarting.
        startup_probe=_health("/health", port, period_seconds=5, failure_threshold=60) if tokens.opa_args else None,
        resources=Resources(args.config.cpu, args.config.memory, args.config.cpu_limit).args(),
        security_context=container_security_context(),
        volume_mounts=[
            _mount("certs", "/certs", read_only=True),
            _mount("config", "/config", read_only=True),
            bundle.mounts[name],
        ],
    )


def kube_mgmt_container(args: PolicyEngineArgs, tokens: ApiTokens) -> k8s.core.v1.ContainerArgs:
    return k8s.core.v1.ContainerArgs(
        name="kube-mgmt",
        image=args.kube_mgmt_image,
        image_pull_policy=pull_policy(args.kube_mgmt_image),
        # Same pod: the sidecar writes the namespaces into the webhook's OPA (the only one whose
        # policy reads them) over loopback, through OPA's serving cert.
        args=[
            f"--opa-url=https://127.0.0.1:{WEBHOOK_PORT}/v1",
            "--opa-allow-insecure",
            "--enable-policies=false",
            "--enable-data=false",
            *tokens.mgmt_args,
            f"--replicate={VMTEMPLATE_GROUP}/{args.vmtemplate_version}/{VMTEMPLATE_RESOURCE}",
            "--replicate-cluster=v1/namespaces",
        ],
        volume_mounts=tokens.mgmt_mounts or None,
        resources=MGMT_RESOURCES.args(),
        security_context=container_security_context(),
    )


class PolicyEngine(pulumi.ComponentResource):
    def __init__(self, name: str, args: PolicyEngineArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:PolicyEngine", name, None, opts)
        c = args.config
        ns = c.namespace
        child = pulumi.ResourceOptions(parent=self)
        serving = self._serving_identity(name, args, host=f"opa.{ns}.svc", child=child)

        self.namespace = k8s.core.v1.Namespace(f"{name}-ns", metadata=restricted_namespace(ns), opts=child)
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        self.tls_secret = k8s.core.v1.Secret(
            f"{name}-tls",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="opa-server-tls", namespace=ns),
            type="kubernetes.io/tls",
            string_data={"tls.crt": serving.cert_pem, "tls.key": serving.key_pem},
            opts=in_ns,
        )
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="opa-config", namespace=ns),
            data={"config.json": json.dumps(opa_config(c, args.otlp_endpoint))},
            opts=in_ns,
        )
        bundle, self.bundle_revision = pack()
        self.bundle_map = k8s.core.v1.ConfigMap(
            f"{name}-bundle",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="opa-bundle", namespace=ns),
            binary_data={"bundle.tar.gz": base64.b64encode(bundle).decode()},
            opts=in_ns,
        )

        scheduler_env: list[k8s.core.v1.EnvVarArgs] = []
        if args.scheduler_token is not None:
            self.scheduler_token, env = secret_env(
                f"{name}-scheduler-token", "greenops-scheduler-token", ns, TOKEN_VARIABLE, args.scheduler_token, in_ns
            )
            scheduler_env.append(env)
        tokens = self._api_tokens(name, args, in_ns)
        self._replication_rbac(name, ns, child)
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-opa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="opa",
                namespace=ns,
                labels=LABELS,
                annotations=scanner_skips(
                    {
                        "CKV_K8S_35": SECRETS_IN_ENV,
                        "CKV_K8S_38": "kube-mgmt lists and watches VmTemplates and Namespaces with the pod's token",
                        "CKV_K8S_8": KUBE_MGMT_UNPROBED,
                        "CKV_K8S_9": KUBE_MGMT_UNPROBED,
                        **digest_skips(args.opa_image, args.kube_mgmt_image, args.bundle_init_image),
                    }
                ),
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=2,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=LABELS),
                template=self._pod(args, tokens, bundle_source(c, args.bundle_init_image), scheduler_env),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[self.tls_secret, self.config_map, self.bundle_map, self.binding, *tokens.secrets],
            ),
        )
        self.service = k8s.core.v1.Service(
            f"{name}-svc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="opa", namespace=ns, labels=LABELS),
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=LABELS,
                ports=[
                    k8s.core.v1.ServicePortArgs(name="https", port=SERVICE_PORT, target_port=OPA_PORT),
                    k8s.core.v1.ServicePortArgs(name="webhook", port=WEBHOOK_PORT, target_port=WEBHOOK_PORT),
                ],
            ),
            opts=in_ns,
        )
        self.webhook = self._webhook(name, c)
        # What the platform team gives its API server (--admission-control-config-file's kubeConfigFile):
        # the token it presents to the webhook's OPA, by the webhook's Service address
        self.admission_kubeconfig = pulumi.Output.secret(
            pulumi.Output.from_input(args.admin_token).apply(
                lambda admin: json.dumps(webhook_kubeconfig({webhook_address(c): webhook_token(admin)}))
            )
        )
        self.register_outputs(
            {
                "caCert": self.ca_pem,
                "webhook": self.webhook.metadata["name"],
                "apiServerAdmissionKubeconfig": self.admission_kubeconfig,
            }
        )

    def _serving_identity(
        self, name: str, args: PolicyEngineArgs, host: str, child: pulumi.ResourceOptions
    ) -> ServingIdentity:
        """OPA's serving certificate and key, and the CA the webhook trusts (``self.ca_pem``): the
        platform team's own when the config gives them, else made here and kept in state."""
        c = args.config
        if c.serving_cert is None or c.ca_bundle is None:
            self._certificates(name, host, child)
            self.ca_pem = self.ca.cert_pem
            return ServingIdentity(self.cert.cert_pem, self.key.private_key_pem)
        if args.serving_key is None:
            # greenops.stack.program refuses this at preview by key; a direct caller of the component too
            raise pulumi.RunError("policy.servingCert is given without its key: set greenops:opaServingKey")
        self.ca_pem = pulumi.Output.from_input(c.ca_bundle)
        return ServingIdentity(pulumi.Output.from_input(c.serving_cert), pulumi.Output.secret(args.serving_key))

    def _certificates(self, name: str, host: str, child: pulumi.ResourceOptions) -> None:
        """A CA and a serving certificate kept in state: stable across `up` runs, secret in state."""
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

    def _api_tokens(self, name: str, args: PolicyEngineArgs, in_ns: pulumi.ResourceOptions) -> ApiTokens:
        """OPA's API: --authentication=token --authorization=basic with the bundle's system.authz.
        GET /health and the webhook's POST / stay open; the tokens reach OPA as variables from
        Secrets, and kube-mgmt reads the admin token from the same Secret mounted as a file."""
        if (args.query_token is None) != (args.admin_token is None):
            missing = "greenops:opaAdminToken" if args.admin_token is None else "greenops:opaToken"
            raise pulumi.RunError(
                f"{missing} is required too: OPA's API needs both its query token "
                "(greenops:opaToken) and kube-mgmt's admin token (greenops:opaAdminToken)"
            )
        if args.query_token is None or args.admin_token is None:  # both None, by the check above
            # greenops.stack.program refuses this at preview by key; a direct caller of the component too
            raise pulumi.RunError(
                "OPA's API would be open to every pod that reaches it: set greenops:opaToken and "
                "greenops:opaAdminToken (pulumi config set --secret) to require bearer tokens"
            )
        ns = args.config.namespace
        self.query_token, query_env = secret_env(
            f"{name}-query-token", "greenops-opa-query-token", ns, QUERY_TOKEN_VARIABLE, args.query_token, in_ns
        )
        self.admin_token, admin_env = secret_env(
            f"{name}-admin-token", "greenops-opa-admin-token", ns, ADMIN_TOKEN_VARIABLE, args.admin_token, in_ns
        )
        # the scraper's (GET /metrics only), derived from the admin token: a PodMonitor reads it from
        # this Secret, so nobody sets it
        self.metrics_token, metrics_env = secret_env(
            f"{name}-metrics-token",
            METRICS_TOKEN_SECRET,
            ns,
            METRICS_TOKEN_VARIABLE,
            pulumi.Output.from_input(args.admin_token).apply(metrics_token),
            in_ns,
        )
        # the API server's, on the webhook's process only, derived from the admin token too: the
        # component's output apiServerAdmissionKubeconfig carries it to the API server's configuration
        self.webhook_token, webhook_env = secret_env(
            f"{name}-webhook-token",
            WEBHOOK_TOKEN_SECRET,
            ns,
            WEBHOOK_TOKEN_VARIABLE,
            pulumi.Output.from_input(args.admin_token).apply(webhook_token),
            in_ns,
        )
        return ApiTokens(
            secrets=[self.query_token, self.admin_token, self.metrics_token, self.webhook_token],
            env=[query_env, admin_env, metrics_env],
            webhook_env=[webhook_env],
            opa_args=["--authentication=token", "--authorization=basic"],
            mgmt_args=[f"--opa-auth-token-file={ADMIN_TOKEN_DIR}/token"],
            mgmt_mounts=[_mount(ADMIN_TOKEN_VOLUME, ADMIN_TOKEN_DIR, read_only=True)],
            volumes=[
                k8s.core.v1.VolumeArgs(
                    name=ADMIN_TOKEN_VOLUME,
                    secret=k8s.core.v1.SecretVolumeSourceArgs(
                        secret_name="greenops-opa-admin-token",
                        items=[k8s.core.v1.KeyToPathArgs(key=ADMIN_TOKEN_VARIABLE, path="token")],
                    ),
                )
            ],
        )

    def _replication_rbac(self, name: str, ns: str, child: pulumi.ResourceOptions) -> None:
        """Least privilege: kube-mgmt only reads VmTemplates and Namespaces (to replicate them into
        OPA; a namespace's label greenops.io/tenant is its VmTemplates' tenant)."""
        self.account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="opa", namespace=ns),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace]),
        )
        read = ["get", "list", "watch"]
        self.role = k8s.rbac.v1.ClusterRole(
            f"{name}-replicate",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="greenops-opa-replicate"),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[VMTEMPLATE_GROUP], resources=[VMTEMPLATE_RESOURCE], verbs=read),
                k8s.rbac.v1.PolicyRuleArgs(api_groups=[""], resources=["namespaces"], verbs=read),
            ],
            opts=child,
        )
        self.binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-replicate",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="greenops-opa-replicate"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="greenops-opa-replicate"
            ),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name="opa", namespace=ns)],
            opts=child,
        )

    def _pod(
        self,
        args: PolicyEngineArgs,
        tokens: ApiTokens,
        bundle: BundleSource,
        scheduler_env: list[k8s.core.v1.EnvVarArgs],
    ) -> k8s.core.v1.PodTemplateSpecArgs:
        return k8s.core.v1.PodTemplateSpecArgs(
            # a new policy in the release rolls the pods (OPA does not watch the mounted file)
            metadata=k8s.meta.v1.ObjectMetaArgs(
                labels=LABELS, annotations={"greenops.io/bundle-revision": self.bundle_revision}
            ),
            spec=k8s.core.v1.PodSpecArgs(
                service_account_name="opa",
                # kube-mgmt lists and watches VmTemplates and Namespaces: the one pod of the platform's
                # own that calls the Kubernetes API, so the one that mounts a token.
                automount_service_account_token=True,
                security_context=pod_security_context(),
                init_containers=bundle.init or None,
                containers=[
                    opa_container(args, tokens, bundle, scheduler_env),
                    opa_container(args, tokens, bundle, scheduler_env, webhook=True),
                    kube_mgmt_container(args, tokens),
                ],
                volumes=[
                    k8s.core.v1.VolumeArgs(
                        name="certs", secret=k8s.core.v1.SecretVolumeSourceArgs(secret_name="opa-server-tls")
                    ),
                    k8s.core.v1.VolumeArgs(
                        name="config", config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name="opa-config")
                    ),
                    *bundle.volumes,
                    *tokens.volumes,
                ],
            ),
        )

    def _webhook(self, name: str, c: PolicyEngineConfig) -> k8s.admissionregistration.v1.MutatingWebhookConfiguration:
        # One definition shared with the local control plane (greenops/policies/webhook.py), as plain
        # Kubernetes JSON: passed through as it is written there.
        client_config: dict = (
            {"url": c.webhook_url}
            if c.webhook_url
            else {"service": {"name": "opa", "namespace": c.namespace, "path": "/", "port": WEBHOOK_PORT}}
        )
        hook = webhook_configuration(
            client_config,
            self.ca_pem.apply(lambda pem: base64.b64encode(pem.encode()).decode()),
            c.webhook_timeout_seconds,
            exclude_namespaces=["kube-system", c.namespace],
        )
        return k8s.admissionregistration.v1.MutatingWebhookConfiguration(
            f"{name}-webhook",
            metadata=hook["metadata"],
            webhooks=hook["webhooks"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.service]),
        )


def webhook_address(c: PolicyEngineConfig) -> str:
    """The webhook's "host:port" as the API server looks its credential up: the URL's, else the
    Service's (the name the API server calls it by)."""
    if c.webhook_url:
        parsed = urllib.parse.urlsplit(c.webhook_url)
        return str(parsed.hostname) if parsed.port in (None, 443) else f"{parsed.hostname}:{parsed.port}"
    return f"opa.{c.namespace}.svc:{WEBHOOK_PORT}"
