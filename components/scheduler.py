"""GreenOpsScheduler: the scheduler service as a Deployment and Service, with probes, and the
PostgreSQL its replicas share for the reservation record (its own release, or an existing server
named by greenops:schedulerDatabaseUrl)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import pulumi
import pulumi_kubernetes as k8s

from components.config import SchedulerConfig
from components.helm import postgresql
from components.pins import ChartPin
from components.secret_env import secret_env
from greenops import endpoints

PORT = endpoints.SCHEDULER_PORT
TOKEN_VARIABLE = "GREENOPS_SCHEDULER_TOKEN"  # read by the scheduler and by OPA's http.send (scheduler.rego)
DATABASE_VARIABLE = "GREENOPS_SCHEDULER_DATABASE"  # the reservation record's SQLAlchemy URL
DATABASE, DB_USER = "greenops", "greenops"
DB_SECRET = "greenops-scheduler-db"  # the platform-deployed PostgreSQL's password
LABELS = {"app.kubernetes.io/name": "greenops-scheduler", "app.kubernetes.io/part-of": "greenops"}


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


def scheduler_container(c: SchedulerConfig, image: str, env: list[k8s.core.v1.EnvVarArgs]) -> k8s.core.v1.ContainerArgs:
    return k8s.core.v1.ContainerArgs(
        name="scheduler",
        image=image,
        args=["--host", "0.0.0.0", "--port", str(PORT), "--source", c.source, "--capacity-vcpu", str(c.capacity_vcpu)],
        ports=[k8s.core.v1.ContainerPortArgs(name="http", container_port=PORT)],
        env=env,
        readiness_probe=_probe("/readyz"),
        liveness_probe=_probe("/healthz"),
        resources=k8s.core.v1.ResourceRequirementsArgs(
            requests={"cpu": c.cpu, "memory": c.memory}, limits={"memory": c.memory}
        ),
        security_context=k8s.core.v1.SecurityContextArgs(
            run_as_non_root=True, read_only_root_filesystem=True, allow_privilege_escalation=False
        ),
    )


def _metadata(c: SchedulerConfig) -> k8s.meta.v1.ObjectMetaArgs:
    # the Deployment and the Service share the name other components address the scheduler by
    return k8s.meta.v1.ObjectMetaArgs(name=endpoints.SCHEDULER_SERVICE, namespace=c.namespace, labels=LABELS)


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
        if args.token is not None:
            self.token_secret, token_env = secret_env(
                f"{name}-token", "greenops-scheduler-token", c.namespace, TOKEN_VARIABLE, args.token, in_ns
            )
            env.append(token_env)
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
            metadata=_metadata(c),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=c.replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=LABELS),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=LABELS),
                    spec=k8s.core.v1.PodSpecArgs(containers=[scheduler_container(c, args.image, env)]),
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
