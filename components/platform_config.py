"""``greenops:platform``: which parts of the platform a stack installs, and how. Validated once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlencode

from kubernetes.utils.quantity import parse_quantity
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from components.pins import VERSIONS_FILE as VERSIONS_FILE  # re-exported: tests name the file from here
from components.pins import PinnedVersions, pinned_versions
from greenops.common import endpoints
from greenops.common.pem import certificates
from greenops.identity.principal import Role
from greenops.models.forecast_names import DEFAULT_STORAGE_PREFIX
from greenops.observability.tracing import opa_distributed_tracing


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class KrateoConfig(_Section):
    enabled: bool = True
    namespace: str = "krateo-system"
    composition_namespace: str = "greenops"
    vm_template_chart_url: str = "oci://ghcr.io/greenops-platform/charts"
    vm_template_chart_version: str = "1.0.0"


class AzureConfig(_Section):
    enabled: bool = True
    subscription_id: str | None = None
    tenant_id: str | None = None
    location: str = "westeurope"
    resource_group: str = "greenops-workloads"
    oidc_issuer_url: str | None = Field(default=None, description="the cluster's service-account token issuer")

    @model_validator(mode="after")
    def _required(self) -> AzureConfig:
        missing = [
            k for k in ("subscription_id", "tenant_id", "oidc_issuer_url") if self.enabled and not getattr(self, k)
        ]
        if missing:
            raise ValueError(f"required when azure is enabled: {', '.join(to_camel(k) for k in missing)}")
        return self


class GcpConfig(_Section):
    enabled: bool = True
    project: str | None = None

    @model_validator(mode="after")
    def _required(self) -> GcpConfig:
        if self.enabled and not self.project:
            raise ValueError("required when gcp is enabled: project")
        return self


class AwsConfig(_Section):
    enabled: bool = True
    region: str = "eu-west-1"
    oidc_provider_arn: str | None = Field(default=None, description="the cluster's IAM OIDC provider (IRSA)")
    oidc_issuer: str | None = Field(default=None, description="issuer host/path, without https://")

    @model_validator(mode="after")
    def _required(self) -> AwsConfig:
        missing = [k for k in ("oidc_provider_arn", "oidc_issuer") if self.enabled and not getattr(self, k)]
        if missing:
            raise ValueError(f"required when aws is enabled: {', '.join(to_camel(k) for k in missing)}")
        return self


class PolicyEngineConfig(_Section):
    enabled: bool = True
    namespace: str = "opa"
    bundle_service_url: str | None = Field(default=None, description="HTTP or OCI registry serving the bundle")
    bundle_service_type: Literal["http", "oci"] = "http"
    bundle_resource: str = "greenops/policy-bundle.tar.gz"
    webhook_url: str | None = Field(
        default=None, description="call OPA at this URL instead of its Service (local API server)"
    )
    webhook_timeout_seconds: int = Field(default=10, ge=1, le=30)
    # Your own PKI (a corporate CA, or one where the pulumi-tls plugin cannot be had): without these
    # the stack makes a CA and OPA's serving certificate itself and keeps them in state.
    ca_bundle: str | None = Field(
        default=None, description="PEM of the CA that signed servingCert: the webhook's caBundle (with servingCert)"
    )
    serving_cert: str | None = Field(
        default=None,
        description="PEM of OPA's serving certificate, for opa.<namespace>.svc; its key is the secret "
        "greenops:opaServingKey (with caBundle)",
    )
    scheduler_url: str = endpoints.in_cluster_scheduler_url()
    # OPA's container; the optimized store (GOGC=400) trades memory for decision latency
    cpu: str = "250m"
    memory: str = "1Gi"
    cpu_limit: str = "1"

    @field_validator("ca_bundle", "serving_cert")
    @classmethod
    def _pem(cls, v: str | None) -> str | None:
        return v if v is None else certificates(v)

    @model_validator(mode="after")
    def _both_or_neither(self) -> PolicyEngineConfig:
        if (self.ca_bundle is None) != (self.serving_cert is None):
            given, missing = ("caBundle", "servingCert") if self.serving_cert is None else ("servingCert", "caBundle")
            raise ValueError(f"{given} is given without {missing}: your own certificate needs both")
        return self


class ServiceAccountPrincipal(_Section):
    """A ServiceAccount the scheduler accepts as a principal (its projected token, audience
    greenops-scheduler, checked through TokenReview): e.g. a CI runner's pod or the reconciler's."""

    service_account: str = Field(
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", description="namespace/name"
    )
    role: Role = "write"
    tenants: list[str] | None = Field(
        default=None, description="null: every tenant (read and admin; report on the cluster path only)"
    )
    paths: list[Literal["pulumi", "cluster", "api"]] = Field(default_factory=lambda: ["pulumi"], min_length=1)

    @model_validator(mode="after")
    def _writers_name_tenants(self) -> ServiceAccountPrincipal:
        if self.tenants is None and self.role == "write":
            raise ValueError(f"{self.service_account}: a writing principal names its tenants")
        # as for issued tokens (greenops.identity.tokens): on the cluster path a namespace's label
        # says whose a reservation is; on the others, nothing would bound what it releases
        if self.tenants is None and self.role == "report" and set(self.paths) != {"cluster"}:
            raise ValueError(
                f"{self.service_account}: a reporting principal for every tenant is on the cluster path only"
            )
        return self


class SchedulerConfig(_Section):
    enabled: bool = True
    namespace: str = endpoints.SCHEDULER_NAMESPACE
    image: str | None = None
    replicas: int = Field(
        default=2,
        ge=1,
        le=20,
        description="replicas share the reservation record in PostgreSQL, which decides every booking",
    )
    cpu: str = "500m"
    memory: str = "512Mi"
    cpu_limit: str = "1"
    source: str = "profiles"
    capacity_vcpu: float = Field(default=512, gt=0, description="the scheduler refuses anything else at start-up")
    service_account_principals: list[ServiceAccountPrincipal] = Field(
        default_factory=list, description="ServiceAccounts the scheduler accepts, with their scopes"
    )


class ControllerConfig(_Section):
    """The cluster path's controller (``python -m greenops.controller``, components/controller.py),
    installed beside the scheduler in its namespace: it follows every VmTemplate, confirms the holds
    OPA's admission booked, records their lifecycle and releases them on deletion.

    It belongs to the cluster path: installed when ``enabled`` and the scheduler (whose record it
    keeps) and the policy engine (whose admission books the holds it follows) are both on; with
    either off, ``enabled`` reads false after validation, since there is nothing to follow or to
    report to."""

    enabled: bool = True
    replicas: int = Field(default=2, ge=1, le=5, description="one leads (the Lease); the others only wait to take over")
    cpu: str = "100m"
    memory: str = "256Mi"
    cpu_limit: str = "500m"
    readiness: Literal["operator", "applied"] = Field(
        default="operator",
        description="operator: a VM runs once its cloud operator reports Ready; applied: once its objects "
        "exist (no operator watched)",
    )
    resync_seconds: int = Field(default=30, ge=5, le=3600)
    sweep_seconds: int = Field(
        default=60, ge=10, le=3600, description="how often the record is compared with the API server's list"
    )
    lease_seconds: int = Field(
        default=15, ge=3, le=300, description="how long a leader's Lease lasts unrenewed before another takes it"
    )
    completion_url: str | None = Field(
        default=None,
        max_length=256,
        pattern=r"^https?://[A-Za-z0-9._~:/%-]+$",
        description="the scheduler's URL as the workload VMs reach it (e.g. through externalAccess): a "
        "VmTemplate with a run then reports its end there with a token scoped to its reservation; none: "
        "its VM reports its end by powering itself off",
    )


class MlflowConfig(_Section):
    enabled: bool = True
    namespace: str = "mlops"
    artifact_endpoint: str | None = Field(default=None, description="an existing S3 endpoint; unset = deploy SeaweedFS")
    bucket: str = "mlflow"


class KserveConfig(_Section):
    enabled: bool = True
    namespace: str = "kserve"
    models_namespace: str = "forecasting"
    deployment_mode: Literal["RawDeployment", "Serverless"] = "RawDeployment"
    zones: list[str] = Field(default_factory=lambda: ["DE", "FR", "GB"])
    storage_prefix: str = DEFAULT_STORAGE_PREFIX  # where the InferenceServices read, publish writes


class CertManagerConfig(_Section):
    """cert-manager, needed by ASO v2's and KServe's webhooks. enabled: the platform installs it, before
    them; enabled: false with existing: true: the cluster already runs one (a managed add-on, another
    team's), and the platform relies on it. Neither, with azure or kserve on, is refused."""

    enabled: bool = True
    namespace: str = "cert-manager"
    existing: bool = Field(default=False, description="the cluster already runs cert-manager; install none")

    @model_validator(mode="after")
    def _one_install(self) -> CertManagerConfig:
        if self.enabled and self.existing:
            raise ValueError("existing: true needs enabled: false (the platform would install a second cert-manager)")
        return self


MIN_WORKSPACE_MEMORY = 2**30  # bytes: pip and a small stack's CLI side by side
# the variables the workspace template sets itself (components/workload_reconciler.py), not secretEnv's to set again
WORKSPACE_ENV = ("PYENV_VERSION", "GOMEMLIMIT")
DNS_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$"


class ExternalAccessConfig(_Section):
    """OPA and the scheduler reachable from outside the cluster, for the Pulumi path run from CI
    (the Automation API): one Ingress per service on its own host name, TLS terminated with a
    certificate from the platform's CA (the stack output opaCaCertificate, which the workloads stack
    trusts as greenops:endpoints.caCertificate). The tokens travel as they do inside: OPA's query
    token and the scheduler's token, as bearer headers, which an Ingress passes through. The
    Kubernetes API's service proxy is no substitute: the API server drops the Authorization header
    once it has authenticated the caller, so neither token would arrive."""

    enabled: bool = False
    opa_host: str | None = Field(
        default=None, pattern=DNS_NAME, max_length=253, description="DNS name for OPA, e.g. opa.greenops.example.com"
    )
    scheduler_host: str | None = Field(
        default=None, pattern=DNS_NAME, max_length=253, description="DNS name for the scheduler"
    )
    ingress_class_name: str | None = Field(default=None, description="unset: the cluster's default IngressClass")
    annotations: dict[str, str] = Field(default_factory=dict, description="controller-specific, on both Ingresses")
    opa_backend_annotations: dict[str, str] = Field(
        default_factory=lambda: {"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"},
        description="how the controller reaches OPA, which serves TLS only (the default is ingress-nginx's and "
        "F5 NGINX's spelling; set your controller's)",
    )

    @model_validator(mode="after")
    def _hosts(self) -> ExternalAccessConfig:
        if self.enabled and not (self.opa_host and self.scheduler_host):
            raise ValueError(
                "enabled: true needs opaHost and schedulerHost, the DNS names CI reaches OPA and the scheduler by"
            )
        if self.enabled and self.opa_host == self.scheduler_host:
            raise ValueError(f"opaHost and schedulerHost are both {self.opa_host!r}: each service needs its own name")
        return self


LabelSelector = dict[str, str]


def _namespace(name: str) -> LabelSelector:
    # set by the API server on every namespace (since Kubernetes 1.22): selects a namespace by name
    return {"kubernetes.io/metadata.name": name}


class NetworkPolicyConfig(_Section):
    """Default-deny NetworkPolicies in every namespace the platform installs into, with explicit
    allows for the flows between its parts (components/network_policy.py). What differs between
    clusters is set here; the defaults admit nothing they cannot name."""

    enabled: bool = True
    api_server_cidrs: list[str] = Field(
        default_factory=list,
        description="the source addresses of the Kubernetes API server's calls to webhooks (OPA's webhook "
        "port, the operators' webhooks), and where the API server's endpoints are. A managed control plane "
        "is outside the pod network, so no pod or namespace selector can name it: EKS, its control-plane "
        "ENIs' subnets; GKE, the control plane's /28 range; AKS, the node subnet (calls come through "
        "konnectivity); a kubeadm cluster, the control-plane nodes. Required: a guess would either admit "
        "every address or break admission",
    )
    api_server_ports: list[int] = Field(
        default_factory=lambda: [443, 6443], description="the API server's endpoint ports (after the Service)"
    )
    ingress_controller_namespace: LabelSelector = Field(
        default_factory=lambda: _namespace("ingress-nginx"),
        description="labels of the ingress controller's namespace: the one way into OPA's decision API "
        "and the scheduler from outside the cluster",
    )
    ingress_controller_pods: LabelSelector = Field(
        default_factory=dict, description="labels of the controller's pods in that namespace; empty: any"
    )
    dns_namespace: LabelSelector = Field(default_factory=lambda: _namespace("kube-system"))
    dns_pods: LabelSelector = Field(default_factory=lambda: {"k8s-app": "kube-dns"})
    decision_client_namespaces: list[LabelSelector] = Field(
        default_factory=list,
        description="more namespaces whose pods query OPA's decision API and call the scheduler (the "
        "reconciler's stack namespace is always admitted)",
    )
    external_cidrs: list[str] = Field(
        default_factory=lambda: ["0.0.0.0/0"],
        description="where pods that must reach a service outside the cluster (cloud APIs, the bundle "
        "registry, git, the state backend, an external PostgreSQL or S3) may connect, on external_ports "
        "only; narrow it to an egress proxy's or NAT's range",
    )
    external_ports: list[int] = Field(default_factory=lambda: [443])
    database_cidrs: list[str] = Field(
        default_factory=list,
        description="an existing PostgreSQL's addresses (greenops:schedulerDatabaseUrl), port database_port",
    )
    database_port: int = 5432

    @field_validator("api_server_cidrs", "external_cidrs", "database_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        import ipaddress

        for cidr in value:
            ipaddress.ip_network(cidr, strict=True)  # ValueError names the bad one
        return value


class SecretKeyRef(_Section):
    """One key of an existing Secret in the reconciler's stackNamespace: named here, never created."""

    name: str
    key: str


class GitAuthConfig(_Section):
    """An existing Secret with the operator's own key names: accessToken; sshPrivateKey; username + password."""

    secret_name: str
    type: Literal["accessToken", "ssh", "basic"] = "accessToken"


class GitSourceConfig(_Section):
    project_repo: str
    branch: str | None = None
    commit: str | None = None
    repo_dir: str | None = Field(default=None, description="the folder holding Pulumi.yaml, when not the root")
    git_auth: GitAuthConfig | None = None

    @model_validator(mode="after")
    def _one_ref(self) -> GitSourceConfig:
        if bool(self.branch) == bool(self.commit):
            raise ValueError("set exactly one of branch, commit")
        return self


class FluxSourceConfig(_Section):
    """A Flux source object in the reconciler's stackNamespace (the Stack CRD's sourceRef has no namespace)."""

    api_version: str = "source.toolkit.fluxcd.io/v1"
    kind: Literal["GitRepository", "OCIRepository", "Bucket"] = "GitRepository"
    name: str
    dir: str | None = Field(default=None, description="the folder holding Pulumi.yaml, when not the root")


class S3BackendConfig(_Section):
    """State in an S3-compatible bucket; its credentials and the stack's passphrase come from Secrets."""

    bucket: str
    region: str
    endpoint: str | None = Field(default=None, description="an S3-compatible endpoint; unset = AWS S3")
    credentials_secret: str = Field(
        default="pulumi-state-s3", description="keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY"
    )
    passphrase_secret: str = Field(default="pulumi-config-passphrase", description="key PULUMI_CONFIG_PASSPHRASE")

    @property
    def url(self) -> str:
        query = {"region": self.region, **({"endpoint": self.endpoint} if self.endpoint else {})}
        return f"s3://{self.bucket}?{urlencode(query, safe=':/')}"


class PulumiCloudBackendConfig(_Section):
    url: str = "https://api.pulumi.com"
    access_token_secret: str = Field(default="pulumi-access-token", description="key accessToken")


class BackendConfig(_Section):
    s3: S3BackendConfig | None = None
    pulumi_cloud: PulumiCloudBackendConfig | None = None

    @model_validator(mode="after")
    def _one(self) -> BackendConfig:
        if (self.s3 is None) == (self.pulumi_cloud is None):
            raise ValueError("set exactly one of s3, pulumiCloud")
        return self

    def env(self) -> dict[str, SecretKeyRef]:
        """The workspace's credentials, as references to Secrets (the values never pass through Pulumi)."""
        if self.s3:
            creds, phrase = self.s3.credentials_secret, self.s3.passphrase_secret
            return {
                "AWS_ACCESS_KEY_ID": SecretKeyRef(name=creds, key="AWS_ACCESS_KEY_ID"),
                "AWS_SECRET_ACCESS_KEY": SecretKeyRef(name=creds, key="AWS_SECRET_ACCESS_KEY"),
                "PULUMI_CONFIG_PASSPHRASE": SecretKeyRef(name=phrase, key="PULUMI_CONFIG_PASSPHRASE"),
            }
        return {"PULUMI_ACCESS_TOKEN": SecretKeyRef(name=self.pulumi_cloud.access_token_secret, key="accessToken")}

    @property
    def url(self) -> str:
        return self.s3.url if self.s3 else self.pulumi_cloud.url


class ReconcilerConfig(_Section):
    """The Pulumi Kubernetes Operator (v2) and one Stack that re-runs ``up`` of a workloads-only stack
    on a timer, so time gates open with nobody running ``greenops reconcile``. Every credential is a
    reference to a Secret that already exists in stackNamespace."""

    enabled: bool = True
    namespace: str = "pulumi-kubernetes-operator"
    stack_namespace: str = Field(default="greenops-reconciler", description="the Stack, its workspace pod and Secrets")
    workloads_namespace: str = Field(
        default="greenops",
        description="where the workloads stack applies its VM objects: its greenops:render.namespace",
    )
    stack: str | None = Field(default=None, description="the workloads stack, never the one installing the platform")
    shards: int = Field(
        default=1,
        ge=1,
        le=100,
        description="one Stack per shard of the workloads stack "
        "(<stack>-shard-<i>; commit their stack files, which `greenops preview --shards N` writes)",
    )
    git: GitSourceConfig | None = None
    flux_source: FluxSourceConfig | None = None
    backend: BackendConfig | None = None
    secret_config: dict[str, SecretKeyRef] = Field(
        default_factory=dict, description="secret stack config, e.g. greenops:opaToken"
    )
    secret_env: dict[str, SecretKeyRef] = Field(default_factory=dict, description="more workspace variables")
    # `greenops reconcile` is a plain `up`, and Placement reads the operators' verdict itself during it
    refresh: bool = False
    workspace_cpu: str = "500m"
    workspace_cpu_limit: str = "2"
    # At 1000 workloads per stack the engine's processes peaked at 2100 MiB together under this
    # default, 2250 MiB with no heap limit, and 1900 MiB under 2Gi's own: 7 % short of a kill
    # (docs/operations/scale.md).
    workspace_memory: str = Field(
        default="2560Mi",
        description="the workspace pod's memory (request and limit): pip installs the project's requirements, "
        "then the Pulumi CLI, its plugins and the program share it (about 2100 MiB at 1000 workloads per "
        "stack; the Go processes' heap is held to 45 % of it)",
    )

    @field_validator("workspace_memory")
    @classmethod
    def _a_memory_quantity(cls, v: str) -> str:
        try:
            size = parse_quantity(v)
        except ValueError:
            raise ValueError(f"{v!r} is not a Kubernetes quantity (e.g. 2Gi, 2048Mi)") from None
        if size < MIN_WORKSPACE_MEMORY:
            raise ValueError(f"{v!r} is under 1Gi: the workspace installs the project's requirements and runs the CLI")
        return v

    @model_validator(mode="after")
    def _required(self) -> ReconcilerConfig:
        if not self.enabled:
            return self
        missing = [k for k in ("stack", "backend") if not getattr(self, k)]
        if missing:
            raise ValueError(f"required when reconciler is enabled: {', '.join(missing)}")
        if (self.git is None) == (self.flux_source is None):
            raise ValueError("set exactly one of git, fluxSource")
        if self.stack_namespace in (self.namespace, self.workloads_namespace):
            # one owner per Namespace: Helm creates namespace, and workloadsNamespace has its own
            raise ValueError("stackNamespace: must differ from namespace and workloadsNamespace")
        taken = sorted(set(self.secret_env) & set(self.backend.env()))
        if taken:
            raise ValueError(f"secretEnv: {', '.join(taken)} already set from backend")
        own = sorted(set(self.secret_env) & set(WORKSPACE_ENV))
        if own:
            raise ValueError(
                f"secretEnv: {', '.join(own)} set by the workspace itself (GOMEMLIMIT from workspaceMemory)"
            )
        return self


class MonitoringConfig(_Section):
    """greenops:platform.monitoring: the Prometheus Operator's monitors and rule and a Grafana
    dashboard (the cluster must run the Prometheus Operator; its CRDs are not installed here)."""

    enabled: bool = False
    prometheus_labels: dict[str, str] = Field(
        default_factory=dict,
        description="labels your Prometheus selects monitors and rules by (kube-prometheus-stack: release: <name>)",
    )
    grafana_labels: dict[str, str] = Field(
        default_factory=lambda: {"grafana_dashboard": "1"},
        description="the label Grafana's dashboard sidecar watches ConfigMaps for",
    )
    dashboard_namespace: str | None = Field(
        default=None, description="where the dashboard's ConfigMap goes; default the scheduler's namespace"
    )
    scrape_interval: str = Field(default="30s", pattern=r"^[1-9][0-9]*(s|m)$")
    prometheus_namespace: LabelSelector = Field(
        default_factory=lambda: _namespace("monitoring"),
        description="labels of Prometheus's namespace: the NetworkPolicies admit its scrapes from there",
    )
    capacity_ratio: float = Field(
        default=0.9, gt=0, le=1, description="GreenOpsCapacityNearlyFull fires above this share of a zone's capacity"
    )


class PlatformConfig(_Section):
    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP collector (http(s)://host:port) the platform's OPA and scheduler export traces "
        "to; none: no traces",
    )
    krateo: KrateoConfig = Field(default_factory=KrateoConfig)
    azure: AzureConfig = Field(default_factory=lambda: AzureConfig(enabled=False))
    gcp: GcpConfig = Field(default_factory=lambda: GcpConfig(enabled=False))
    aws: AwsConfig = Field(default_factory=lambda: AwsConfig(enabled=False))
    policy: PolicyEngineConfig = Field(default_factory=PolicyEngineConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    # after policy and scheduler: its check reads them (validated even when absent, to apply it)
    controller: ControllerConfig = Field(default_factory=ControllerConfig, validate_default=True)
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)
    kserve: KserveConfig = Field(default_factory=KserveConfig)
    # after azure and kserve: its check reads them
    cert_manager: CertManagerConfig = Field(default_factory=CertManagerConfig)
    reconciler: ReconcilerConfig = Field(default_factory=lambda: ReconcilerConfig(enabled=False))
    external_access: ExternalAccessConfig = Field(default_factory=ExternalAccessConfig)
    # after every part: its check reads them
    network_policy: NetworkPolicyConfig = Field(default_factory=NetworkPolicyConfig)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    versions: PinnedVersions = Field(
        default_factory=pinned_versions,
        description="components/versions.yaml; a stack overrides an entry, or fields of one, under versions.<entry>",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _exportable(cls, v: str | None) -> str | None:
        if v is not None:
            opa_distributed_tracing(v)  # OPA's form of it: refused here rather than by OPA at start-up
        return v

    @field_validator("cert_manager")
    @classmethod
    def _webhooks_have_cert_manager(cls, v: CertManagerConfig, info: ValidationInfo) -> CertManagerConfig:
        needs = [
            f"{k} ({what})"
            for k, what in (("azure", "ASO v2"), ("kserve", "KServe"))
            if getattr(info.data.get(k), "enabled", False)
        ]
        if needs and not v.enabled and not v.existing:
            verb = "need" if len(needs) > 1 else "needs"
            raise ValueError(
                f"{' and '.join(needs)} {verb} cert-manager to issue webhook certificates: set "
                "certManager.enabled: true (the platform installs it), or certManager.existing: true "
                "if the cluster already runs one"
            )
        return v

    @field_validator("controller")
    @classmethod
    def _controller_follows_the_cluster_path(cls, v: ControllerConfig, info: ValidationInfo) -> ControllerConfig:
        path = all(getattr(info.data.get(k), "enabled", False) for k in ("scheduler", "policy"))
        return v if path or not v.enabled else v.model_copy(update={"enabled": False})

    @field_validator("external_access")
    @classmethod
    def _routes_have_backends(cls, v: ExternalAccessConfig, info: ValidationInfo) -> ExternalAccessConfig:
        off = [k for k in ("policy", "scheduler") if not getattr(info.data.get(k), "enabled", False)]
        if v.enabled and off:
            raise ValueError(
                f"externalAccess routes to OPA and the scheduler, and this stack turns off {' and '.join(off)}"
            )
        return v

    @field_validator("network_policy")
    @classmethod
    def _webhooks_are_admitted(cls, v: NetworkPolicyConfig, info: ValidationInfo) -> NetworkPolicyConfig:
        callers = [
            k for k in ("policy", "azure", "kserve", "cert_manager") if getattr(info.data.get(k), "enabled", False)
        ]
        if v.enabled and callers and not v.api_server_cidrs:
            raise ValueError(
                "apiServerCidrs is required: the API server calls the webhooks of "
                f"{', '.join(to_camel(k) for k in callers)}, and a managed control plane is outside the pod "
                "network, so only its addresses can admit it (see NetworkPolicyConfig); or set enabled: false "
                "where the cluster enforces no NetworkPolicy"
            )
        return v

    @field_validator("versions", mode="before")
    @classmethod
    def _over_the_pinned_file(cls, overrides: Any) -> Any:
        """A stack's overrides laid over the pinned entries, then validated as the file is, so a bad
        override is refused here, by entry and field, before anything is declared."""
        if isinstance(overrides, PinnedVersions):
            return overrides
        if not isinstance(overrides, Mapping):
            raise ValueError("expected a mapping of components/versions.yaml entries to override")
        return pinned_versions().overridden(overrides)
