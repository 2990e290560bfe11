"""GreenOpsScheduler: the scheduler service as a Deployment and Service, with probes, and the
PostgreSQL its replicas share for the reservation record (its own release, or an existing server
named by greenops:schedulerDatabaseUrl)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import pulumi
import pulumi_kubernetes as k8s

from components.config import SchedulerConfig
from components.hardening import (
    Resources,
    container_security_context,
    digest_skips,
    pod_security_context,
    pull_policy,
    scanner_skips,
    scratch,
)
from components.helm import postgresql
from components.pins import ChartPin
from components.secret_env import secret_env, secret_file
from greenops import endpoints

PORT = endpoints.SCHEDULER_PORT
TOKEN_VARIABLE = "GREENOPS_SCHEDULER_TOKEN"  # read by the scheduler and by OPA's http.send (scheduler.rego)
DATABASE_VARIABLE = "GREENOPS_SCHEDULER_DATABASE"  # the reservation record's SQLAlchemy URL
DATABASE, DB_USER = "greenops", "greenops"
DB_SECRET = "greenops-scheduler-db"  # the platform-deployed PostgreSQL's password
LABELS = {"app.kubernetes.io/name": "greenops-scheduler", "app.kubernetes.io/part-of": "greenops"}
TOKEN_DIR = "/var/run/secrets/greenops/scheduler-token"  # --token-file reads TOKEN_DIR/token
DATABASE_IN_ENV = (
    "GREENOPS_SCHEDULER_DATABASE (the URL with the database password) has no file option in the scheduler, "
    "and --database would show it in ps; it comes from a Secret through secretKeyRef"
)


@dataclass
class GreenOpsSchedulerArgs:
    config: SchedulerConfig
    image: str
    token: pulumi.Input[str] | None = None  # greenops:schedulerToken: callers must present it
    # The reservation record: an existing PostgreSQL (greenops:schedulerDatabaseUrl), or else a
    # release of postgresql_chart with the password greenops:schedulerDbPassword.
    database_url: pulumi.Input[str] | None = None
    db_password: pulumi.Input[str] | None = None
    postgresql_chart: ChartPin | None = None


def _probe(path: str) -> k8s.core.v1.ProbeArgs:
    return k8s.core.v1.ProbeArgs(http_get=k8s.core.v1.HTTPGetActionArgs(path=path, port=PORT), period_seconds=10)


def scheduler_container(
    c: SchedulerConfig,
    image: str,
    env: list[k8s.core.v1.EnvVarArgs],
    mounts: list[k8s.core.v1.VolumeMountArgs] | None = None,
    token_file: str | None = None,
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
            *(["--token-file", token_file] if token_file else []),
        ],
        ports=[k8s.core.v1.ContainerPortArgs(name="http", container_port=PORT)],
        env=env,
        readiness_probe=_probe("/readyz"),
        liveness_probe=_probe("/healthz"),
        resources=Resources(c.cpu, c.memory, c.cpu_limit).args(),
        security_context=container_security_context(),
        volume_mounts=mounts or None,
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
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=c.namespace),
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        env: list[k8s.core.v1.EnvVarArgs] = []
        # the root filesystem is read-only: Python's and the libraries' temporary files go here
        tmp_volume, tmp_mount = scratch("tmp", "/tmp")
        volumes, mounts, token_file = [tmp_volume], [tmp_mount], None
        if args.token is not None:
            # a file (--token-file) rather than a variable: not in the process environment, which
            # every child process and crash report inherits
            self.token_secret, token_volume, token_mount = secret_file(
                f"{name}-token", "greenops-scheduler-token", c.namespace, TOKEN_VARIABLE, args.token, TOKEN_DIR, in_ns
            )
            volumes.append(token_volume)
            mounts.append(token_mount)
            token_file = f"{TOKEN_DIR}/token"
        after: list[pulumi.Resource] = [self.namespace]
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
            metadata=_metadata(c, scanner_skips({"CKV_K8S_35": DATABASE_IN_ENV, **digest_skips(args.image)})),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=c.replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=LABELS),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=LABELS),
                    spec=k8s.core.v1.PodSpecArgs(
                        # the scheduler never calls the Kubernetes API
                        automount_service_account_token=False,
                        security_context=pod_security_context(),
                        containers=[scheduler_container(c, args.image, env, mounts, token_file)],
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
