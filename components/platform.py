"""GreenOpsPlatform: the whole control plane from one validated PlatformConfig; every part can
be switched off per stack."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.aws_controllers import AwsControllers, AwsControllersArgs
from components.azure_operator import AzureServiceOperator, AzureServiceOperatorArgs
from components.cert_manager import CertManager, CertManagerArgs
from components.config_connector import ConfigConnector, ConfigConnectorArgs
from components.controller import Controller, ControllerArgs, scheduler_principals
from components.external_access import Backend, ExternalAccess, ExternalAccessArgs, opa_backend
from components.krateo import KrateoArgs, KrateoPlatform
from components.mlops import ModelServing, ModelServingArgs, ModelTracking, ModelTrackingArgs
from components.monitoring import Monitoring, MonitoringArgs
from components.network_policy import NetworkPolicies, NetworkPoliciesArgs
from components.platform_config import PlatformConfig
from components.policy_engine import SERVICE_PORT as OPA_SERVICE_PORT
from components.policy_engine import PolicyEngine, PolicyEngineArgs
from components.scheduler import PORT as SCHEDULER_PORT
from components.scheduler import GreenOpsScheduler, GreenOpsSchedulerArgs
from components.workload_reconciler import WorkloadReconciler, WorkloadReconcilerArgs


@dataclass
class PlatformSecrets:
    mlflow_db_password: pulumi.Input[str] | None = None
    s3_access_key: pulumi.Input[str] | None = None
    s3_secret_key: pulumi.Input[str] | None = None
    # greenops:schedulerAdminToken: the scheduler's bootstrap admin (issues the tenants' API tokens)
    scheduler_admin_token: pulumi.Input[str] | None = None
    # greenops:opaSchedulerToken: OPA's credential at the scheduler, a principal on the cluster path only
    opa_scheduler_token: pulumi.Input[str] | None = None
    opa_token: pulumi.Input[str] | None = None  # greenops:opaToken: OPA's query token, also Placement's
    opa_admin_token: pulumi.Input[str] | None = None  # greenops:opaAdminToken: kube-mgmt's, for writes
    scheduler_database_url: pulumi.Input[str] | None = None  # greenops:schedulerDatabaseUrl: an existing PostgreSQL
    scheduler_db_password: pulumi.Input[str] | None = None  # greenops:schedulerDbPassword: or the platform's own
    metrics_token: pulumi.Input[str] | None = None  # greenops:metricsToken: Prometheus's, with monitoring
    opa_serving_key: pulumi.Input[str] | None = None  # greenops:opaServingKey: with policy.servingCert


@dataclass
class GreenOpsPlatformArgs:
    config: PlatformConfig
    secrets: PlatformSecrets
    # How often the workloads stack is reconciled: greenops:reconcile.intervalSeconds, the one number
    # the time gates' lead is checked against, so the operator's resync has no setting of its own.
    reconcile_interval_seconds: int = 300


class GreenOpsPlatform(pulumi.ComponentResource):
    def __init__(self, name: str, args: GreenOpsPlatformArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:GreenOpsPlatform", name, None, opts)
        c, pins = args.config, args.config.versions
        child = pulumi.ResourceOptions(parent=self)
        self.parts: dict[str, pulumi.ComponentResource] = {}
        if c.krateo.enabled:
            self.parts["krateo"] = KrateoPlatform("krateo", KrateoArgs(c.krateo, pins.krateo_core_provider), child)
        # cert-manager first: ASO's and KServe's releases declare Certificates and need its webhook up.
        # With certManager.existing they rely on the cluster's own; with neither, the config is refused.
        webhook_certs: list[pulumi.Resource] = []
        if c.cert_manager.enabled:
            self.parts["certManager"] = CertManager(
                "cert-manager", CertManagerArgs(c.cert_manager, pins.cert_manager), child
            )
            webhook_certs.append(self.parts["certManager"].release)
        if c.azure.enabled:
            self.parts["azure"] = AzureServiceOperator(
                "aso", AzureServiceOperatorArgs(c.azure, pins.azure_service_operator, after=webhook_certs), child
            )
        if c.gcp.enabled:
            self.parts["gcp"] = ConfigConnector("kcc", ConfigConnectorArgs(c.gcp, pins.config_connector), child)
        if c.aws.enabled:
            self.parts["aws"] = AwsControllers("ack", AwsControllersArgs(c.aws, pins.ack_ec2), child)
        if c.scheduler.enabled:
            image = c.scheduler.image or pins.greenops_image
            s = args.secrets
            scheduler_part = GreenOpsScheduler(
                "scheduler",
                GreenOpsSchedulerArgs(
                    c.scheduler,
                    image,
                    admin_token=s.scheduler_admin_token,
                    opa_token=s.opa_scheduler_token if c.policy.enabled else None,
                    database_url=s.scheduler_database_url,
                    db_password=s.scheduler_db_password,
                    postgresql_chart=pins.postgresql,
                    platform_principals=scheduler_principals(c),
                    metrics_token=s.metrics_token if c.monitoring.enabled else None,
                    otlp_endpoint=c.otlp_endpoint,
                ),
                child,
            )
            self.parts["scheduler"] = scheduler_part
            if c.controller.enabled:
                # beside the scheduler, in its namespace, from its image; after it, whose record it follows
                self.parts["controller"] = Controller(
                    "controller",
                    ControllerArgs(
                        c.controller, c.scheduler.namespace, image, scheduler_part.url, after=[scheduler_part]
                    ),
                    pulumi.ResourceOptions(parent=self, depends_on=[scheduler_part]),
                )
        if c.policy.enabled:
            self.parts["policy"] = PolicyEngine(
                "opa",
                PolicyEngineArgs(
                    c.policy,
                    pins.opa_image,
                    pins.kube_mgmt_image,
                    bundle_init_image=pins.bundle_init_image,
                    scheduler_token=args.secrets.opa_scheduler_token,
                    query_token=args.secrets.opa_token,
                    admin_token=args.secrets.opa_admin_token,
                    serving_key=args.secrets.opa_serving_key,
                    otlp_endpoint=c.otlp_endpoint,
                ),
                child,
            )
        if c.mlflow.enabled:
            s = args.secrets
            self.parts["mlflow"] = ModelTracking(
                "mlflow",
                ModelTrackingArgs(
                    c.mlflow,
                    pins.mlflow,
                    pins.postgresql,
                    pins.seaweedfs,
                    s.mlflow_db_password,
                    s.s3_access_key,
                    s.s3_secret_key,
                ),
                child,
            )
        if c.kserve.enabled:
            s, tracking = args.secrets, self.parts.get("mlflow")
            self.parts["kserve"] = ModelServing(
                "kserve",
                ModelServingArgs(
                    c.kserve,
                    pins.kserve_crd,
                    pins.kserve,
                    pins.mlserver_image,
                    after=webhook_certs,
                    # the models are read from the tracking store's object store, with the same keys
                    s3_endpoint=tracking.endpoint if tracking else c.mlflow.artifact_endpoint,
                    s3_access_key=s.s3_access_key,
                    s3_secret_key=s.s3_secret_key,
                ),
                child,
            )
        if c.reconciler.enabled:
            r = c.reconciler
            # One owner per namespace: the scheduler's, when the workloads share it.
            scheduler = self.parts.get("scheduler")
            shared_ns = scheduler.namespace if scheduler and c.scheduler.namespace == r.workloads_namespace else None
            self.parts["reconciler"] = WorkloadReconciler(
                "pko",
                WorkloadReconcilerArgs(
                    r,
                    pins.pulumi_kubernetes_operator,
                    pins.pulumi_workspace,
                    args.reconcile_interval_seconds,
                    shared_ns,
                    after=list(self.parts.values()),
                ),
                child,
            )
        if c.monitoring.enabled and c.scheduler.enabled:
            policy = self.parts.get("policy")
            self.parts["monitoring"] = Monitoring(
                "monitoring",
                MonitoringArgs(
                    c.monitoring,
                    c.scheduler.namespace,
                    c.policy.namespace if policy else None,
                    controller="controller" in self.parts,
                    metrics_token=args.secrets.metrics_token or "",
                    opa_ca_pem=policy.ca_pem if isinstance(policy, PolicyEngine) else None,
                    interval_seconds=args.reconcile_interval_seconds,
                ),
                pulumi.ResourceOptions(parent=self, depends_on=list(self.parts.values())),
            )
        if c.external_access.enabled:
            policy, scheduler = self.parts["policy"], self.parts["scheduler"]
            self.parts["externalAccess"] = ExternalAccess(
                "external",
                ExternalAccessArgs(
                    c.external_access,
                    opa=opa_backend(c.policy.namespace, policy.service.metadata["name"], OPA_SERVICE_PORT),
                    scheduler=Backend(c.scheduler.namespace, scheduler.service.metadata["name"], SCHEDULER_PORT),
                    ca_key_pem=policy.ca_key.private_key_pem,
                    ca_cert_pem=policy.ca_pem,
                ),
                child,
            )
        if c.network_policy.enabled:
            # last: into the namespaces every other part creates
            self.parts["networkPolicies"] = NetworkPolicies(
                "netpol", NetworkPoliciesArgs(c, after=list(self.parts.values())), child
            )
        self.register_outputs({"parts": sorted(self.parts)})
