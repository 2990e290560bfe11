"""GreenOpsScheduler: the scheduler service as a Deployment and Service, with probes, and the
PostgreSQL its replicas share for the reservation record (its own release, or an existing server
named by greenops:schedulerDatabaseUrl).

Its callers are principals (greenops.identity): the bootstrap admin (greenops:schedulerAdminToken,
mounted as a file), the principals it declares in a ConfigMap (OPA's token by its digest; the
ServiceAccounts of greenops:platform.scheduler.serviceAccountPrincipals and the platform's own, the
cluster path's controller's, reviewed with the API server), and the API tokens the admin issues to
tenants."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.hardening import (
    Resources,
    container_security_context,
    digest_skips,
    pod_security_context,
    pull_policy,
    restricted_namespace,
    scanner_skips,
    scratch,
)
from components.helm import postgresql
from components.pins import ChartPin
from components.platform_config import SchedulerConfig, ServiceAccountPrincipal
from components.secret_env import secret_env, secret_file
from greenops.common import endpoints
from greenops.observability import tracing

PORT = endpoints.SCHEDULER_PORT
TOKEN_VARIABLE = endpoints.SCHEDULER_TOKEN_VARIABLE  # a client's credential: OPA's http.send (scheduler.rego)
ADMIN_TOKEN_DIR = "/var/run/secrets/greenops/admin"  # the bootstrap admin's token, a mounted Secret
PRINCIPALS_DIR = "/etc/greenops/principals"  # the declared principals, a mounted ConfigMap
DATABASE_VARIABLE = "GREENOPS_SCHEDULER_DATABASE"  # the reservation record's SQLAlchemy URL
DATABASE, DB_USER = "greenops", "greenops"
DB_SECRET = "greenops-scheduler-db"  # the platform-deployed PostgreSQL's password
SERVICE_ACCOUNT = "greenops-scheduler"
LABELS = {"app.kubernetes.io/name": "greenops-scheduler", "app.kubernetes.io/part-of": "greenops"}
DATABASE_IN_ENV = (
    "GREENOPS_SCHEDULER_DATABASE (the URL with the database password) has no file option in the scheduler, "
    "and --database would show it in ps; it comes from a Secret through secretKeyRef"
)
REVIEWS_WITH_ITS_TOKEN = (
    "the scheduler reviews its ServiceAccount principals' tokens (TokenReview) with the pod's token"
)


@dataclass
class GreenOpsSchedulerArgs:
    config: SchedulerConfig
    image: str
    admin_token: pulumi.Input[str] | None = None  # greenops:schedulerAdminToken (required)
    opa_token: pulumi.Input[str] | None = None  # greenops:opaSchedulerToken: OPA's, declared by digest
    # The reservation record: an existing PostgreSQL (greenops:schedulerDatabaseUrl), or else a
    # release of postgresql_chart with the password greenops:schedulerDbPassword.
    database_url: pulumi.Input[str] | None = None
    db_password: pulumi.Input[str] | None = None
    postgresql_chart: ChartPin | None = None
    # the platform's own ServiceAccounts it accepts besides the stack's (the cluster path's controller)
    platform_principals: list[ServiceAccountPrincipal] = field(default_factory=list)
    otlp_endpoint: str | None = None  # greenops:platform.otlpEndpoint: where its traces go (none: off)
    metrics_token: pulumi.Input[str] | None = None  # greenops:metricsToken: Prometheus's, declared by digest


def _digest(token: pulumi.Input[str] | None) -> pulumi.Output[str | None]:
    """A declared token's SHA-256: a digest of a 256-bit token is not a secret."""
    if token is None:
        return pulumi.Output.from_input(None)
    return pulumi.Output.from_input(token).apply(lambda t: hashlib.sha256(t.encode()).hexdigest())


def _probe(path: str) -> k8s.core.v1.ProbeArgs:
    return k8s.core.v1.ProbeArgs(http_get=k8s.core.v1.HTTPGetActionArgs(path=path, port=PORT), period_seconds=10)


def service_accounts(
    c: SchedulerConfig, platform_principals: Sequence[ServiceAccountPrincipal] = ()
) -> list[ServiceAccountPrincipal]:
    """Every ServiceAccount the scheduler accepts: the stack's, then the platform's own. Any at all,
    and the scheduler reviews tokens with the API server (TokenReview)."""
    accounts = [*c.service_account_principals, *platform_principals]
    names = [a.service_account for a in accounts]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        # the principals file keeps the last entry of an account: say so rather than drop one silently
        raise ValueError(
            f"greenops:platform.scheduler.serviceAccountPrincipals: {', '.join(twice)} declared more than once "
            "(the platform declares its own parts' accounts itself)"
        )
    return accounts


def principals_document(
    c: SchedulerConfig,
    opa_digest: str | None,
    platform_principals: Sequence[ServiceAccountPrincipal] = (),
    metrics_digest: str | None = None,
) -> str:
    """The principals file (greenops.identity.principals) the scheduler reads: OPA, which books and
    releases cluster-path reservations for every tenant (the namespace's label says whose), Prometheus
    (greenops:metricsToken: reads /metrics, every tenant, writes nothing), and the ServiceAccounts of
    service_accounts."""
    entries: list[dict[str, Any]] = []
    if opa_digest is not None:
        entries.append({"name": "opa", "tokenSha256": opa_digest, "role": "write", "paths": ["cluster"]})
    if metrics_digest is not None:
        entries.append({"name": "prometheus", "tokenSha256": metrics_digest, "role": "read", "paths": ["api"]})
    entries += [a.model_dump(by_alias=True, exclude_none=True) for a in service_accounts(c, platform_principals)]
    return yaml.safe_dump({"principals": entries}, sort_keys=False)


def scheduler_container(
    c: SchedulerConfig,
    image: str,
    env: list[k8s.core.v1.EnvVarArgs],
    mounts: list[k8s.core.v1.VolumeMountArgs] | None = None,
) -> k8s.core.v1.ContainerArgs:
    return k8s.core.v1.ContainerArgs(
        name="scheduler",
        image=image,
        image_pull_policy=pull_policy(image),
        args=[
            "--host",
            "0.0.0.0",
            "--port",
            str(PORT),
            "--source",
            c.source,
            "--capacity-vcpu",
            str(c.capacity_vcpu),
            "--admin-token-file",
            f"{ADMIN_TOKEN_DIR}/token",
            "--principals",
            f"{PRINCIPALS_DIR}/principals.yaml",
        ],
        volume_mounts=mounts,
        ports=[k8s.core.v1.ContainerPortArgs(name="http", container_port=PORT)],
        env=env,
        readiness_probe=_probe("/readyz"),
        liveness_probe=_probe("/healthz"),
        resources=Resources(c.cpu, c.memory, c.cpu_limit).args(),
        security_context=container_security_context(),
    )


def _metadata(c: SchedulerConfig, annotations: dict[str, str] | None = None) -> k8s.meta.v1.ObjectMetaArgs:
    # the Deployment and the Service share the name other components address the scheduler by
    return k8s.meta.v1.ObjectMetaArgs(
        name=endpoints.SCHEDULER_SERVICE, namespace=c.namespace, labels=LABELS, annotations=annotations
    )


class GreenOpsScheduler(pulumi.ComponentResource):
    def __init__(self, name: str, args: GreenOpsSchedulerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:GreenOpsScheduler", name, None, opts)
        c = args.config
        # TokenReview is needed only for ServiceAccount principals: only then does the pod get an
        # identity of its own that may ask the API server (system:auth-delegator) and a token.
        # (Checked before anything is declared: an account declared twice is refused.)
        reviews = bool(service_accounts(c, args.platform_principals))
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=restricted_namespace(c.namespace),
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        env: list[k8s.core.v1.EnvVarArgs] = []
        if args.otlp_endpoint:
            env.append(k8s.core.v1.EnvVarArgs(name=tracing.ENDPOINT_VARIABLE, value=args.otlp_endpoint))
        if args.admin_token is None:
            # the platform refuses this at preview by key (greenops.stack.program); a direct caller too
            raise ValueError("the scheduler needs its bootstrap admin token (greenops:schedulerAdminToken)")
        # a file (--admin-token-file) rather than a variable: not in the process environment, which
        # every child process and crash report inherits
        self.admin_token, admin_volume, admin_mount = secret_file(
            f"{name}-admin-token",
            "greenops-scheduler-admin-token",
            c.namespace,
            "token",
            args.admin_token,
            ADMIN_TOKEN_DIR,
            in_ns,
        )
        digests = pulumi.Output.all(_digest(args.opa_token), _digest(args.metrics_token))
        self.principals = k8s.core.v1.ConfigMap(
            f"{name}-principals",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="greenops-scheduler-principals", namespace=c.namespace),
            # a digest of a 256-bit token is not a secret: nothing can be recovered from it
            data={
                "principals.yaml": digests.apply(
                    lambda d: principals_document(c, d[0], args.platform_principals, metrics_digest=d[1])
                )
            },
            opts=in_ns,
        )
        # the root filesystem is read-only: Python's and the libraries' temporary files go here
        tmp_volume, tmp_mount = scratch("tmp", "/tmp")
        volumes = [
            tmp_volume,
            admin_volume,
            k8s.core.v1.VolumeArgs(
                name="principals",
                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name="greenops-scheduler-principals"),
            ),
        ]
        mounts = [
            tmp_mount,
            admin_mount,
            k8s.core.v1.VolumeMountArgs(name="principals", mount_path=PRINCIPALS_DIR, read_only=True),
        ]
        if reviews:
            self._token_reviewer(name, c, in_ns)
        after: list[pulumi.Resource] = [self.namespace, self.admin_token, self.principals]
        if args.database_url is not None:
            url = args.database_url
        else:
            self.database = self._postgresql(name, args, in_ns)
            host = f"{name}-postgresql.{c.namespace}.svc:5432"
            url = pulumi.Output.from_input(args.db_password).apply(
                lambda pw: f"postgresql+psycopg://{DB_USER}:{quote(pw, safe='')}@{host}/{DATABASE}"
            )
            after.append(self.database)
        self.database_secret, database_env = secret_env(
            f"{name}-database", "greenops-scheduler-database", c.namespace, DATABASE_VARIABLE, url, in_ns
        )
        env.append(database_env)
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deploy",
            metadata=_metadata(
                c,
                scanner_skips(
                    {
                        "CKV_K8S_35": DATABASE_IN_ENV,
                        **({"CKV_K8S_38": REVIEWS_WITH_ITS_TOKEN} if reviews else {}),
                        **digest_skips(args.image),
                    }
                ),
            ),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=c.replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=LABELS),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=LABELS),
                    spec=k8s.core.v1.PodSpecArgs(
                        # the API server is called only to review ServiceAccount principals' tokens
                        automount_service_account_token=reviews,
                        service_account_name=SERVICE_ACCOUNT if reviews else None,
                        security_context=pod_security_context(),
                        containers=[scheduler_container(c, args.image, env, mounts)],
                        volumes=volumes,
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        self.service = k8s.core.v1.Service(
            f"{name}-svc",
            metadata=_metadata(c),
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=LABELS, ports=[k8s.core.v1.ServicePortArgs(name="http", port=PORT, target_port=PORT)]
            ),
            opts=in_ns,
        )
        self.url = endpoints.in_cluster_scheduler_url(c.namespace)
        self.register_outputs({"url": self.url})

    def _token_reviewer(self, name: str, c: SchedulerConfig, opts: pulumi.ResourceOptions) -> None:
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=SERVICE_ACCOUNT, namespace=c.namespace, labels=LABELS),
            opts=opts,
        )
        self.token_reviews = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-token-reviews",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"greenops-scheduler-token-reviews-{c.namespace}", labels=LABELS),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="system:auth-delegator"
            ),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SERVICE_ACCOUNT, namespace=c.namespace)],
            opts=opts,
        )

    def _postgresql(self, name: str, args: GreenOpsSchedulerArgs, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        if args.db_password is None or args.postgresql_chart is None:
            raise ValueError(
                "the scheduler's reservation record needs greenops:schedulerDatabaseUrl (an existing "
                "PostgreSQL) or greenops:schedulerDbPassword (the platform deploys one)"
            )
        ns = args.config.namespace
        credentials = k8s.core.v1.Secret(
            f"{name}-db-credentials",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DB_SECRET, namespace=ns),
            string_data={"password": pulumi.Output.secret(args.db_password)},
            opts=opts,
        )
        secret = (DB_SECRET, "password")
        return postgresql(name, args.postgresql_chart, ns, DATABASE, DB_USER, secret, self, [credentials])
