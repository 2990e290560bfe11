"""ModelTracking (MLflow with a PostgreSQL backend store and an S3 artifact store) and
ModelServing (KServe, the MLflow-capable MLServer runtime, one InferenceService per forecast
zone plus the generic fallback) (thesis §3.7)."""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.config import KserveConfig, MlflowConfig
from components.helm import release


@dataclass
class ModelTrackingArgs:
    config: MlflowConfig
    mlflow_chart: dict
    postgresql_chart: dict
    seaweedfs_chart: dict
    db_password: pulumi.Input[str]
    s3_access_key: pulumi.Input[str]
    s3_secret_key: pulumi.Input[str]


class ModelTracking(pulumi.ComponentResource):
    def __init__(self, name: str, args: ModelTrackingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:ModelTracking", name, None, opts)
        c = args.config
        ns = c.namespace
        self.credentials = k8s.core.v1.Secret(
            f"{name}-credentials", metadata={"name": "mlflow-credentials", "namespace": ns},
            string_data={"postgres-password": args.db_password, "AWS_ACCESS_KEY_ID": args.s3_access_key,
                         "AWS_SECRET_ACCESS_KEY": args.s3_secret_key},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[
                k8s.core.v1.Namespace(f"{name}-ns", metadata={"name": ns}, opts=pulumi.ResourceOptions(parent=self))]))
        # The backend store: its own PostgreSQL, password from the secret above.
        self.database = release(f"{name}-postgresql", args.postgresql_chart, ns, {
            "auth": {"database": "mlflow", "username": "mlflow", "existingSecret": "mlflow-credentials",
                     "secretKeys": {"userPasswordKey": "postgres-password", "adminPasswordKey": "postgres-password"}},
        }, self, depends_on=[self.credentials])
        endpoint = c.artifact_endpoint
        self.object_store = None
        if endpoint is None:
            # No S3 endpoint given: SeaweedFS with its S3 gateway, as in the thesis.
            self.object_store = release(f"{name}-seaweedfs", args.seaweedfs_chart, ns,
                                        {"s3": {"enabled": True, "enableAuth": True}}, self)
            endpoint = f"http://{name}-seaweedfs-s3.{ns}.svc:8333"
        self.endpoint = endpoint
        self.server = release(f"{name}-mlflow", args.mlflow_chart, ns, {
            "backendStore": {"databaseMigration": True, "postgres": {
                "enabled": True, "host": f"{name}-postgresql.{ns}.svc", "port": 5432, "database": "mlflow",
                "user": "mlflow", "password": args.db_password}},
            "artifactRoot": {"proxiedArtifactStorage": True, "s3": {
                "enabled": True, "bucket": c.bucket, "awsAccessKeyId": args.s3_access_key,
                "awsSecretAccessKey": args.s3_secret_key}},
            "extraEnvVars": {"MLFLOW_S3_ENDPOINT_URL": endpoint},
        }, self, depends_on=[self.database] + ([self.object_store] if self.object_store else []))
        self.tracking_uri = f"http://{name}-mlflow.{ns}.svc:5000"
        self.register_outputs({"trackingUri": self.tracking_uri, "artifactEndpoint": endpoint})


@dataclass
class ModelServingArgs:
    config: KserveConfig
    crd_chart: dict
    chart: dict
    mlserver_image: str
    s3_endpoint: str | None = None


def forecaster_names(zones: list[str]) -> list[str]:
    """The model names the scheduler's OIP source asks for (sources/oip.py)."""
    return [f"forecaster-{z.lower()}" for z in zones] + ["forecaster-generic"]


class ModelServing(pulumi.ComponentResource):
    def __init__(self, name: str, args: ModelServingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:ModelServing", name, None, opts)
        c = args.config
        self.crds = release(f"{name}-crds", args.crd_chart, c.namespace, {}, self)
        self.controller = release(f"{name}-controller", args.chart, c.namespace, {
            "kserve": {"controller": {"deploymentMode": c.deployment_mode}},
        }, self, depends_on=[self.crds])
        models_ns = k8s.core.v1.Namespace(f"{name}-models-ns", metadata={"name": c.models_namespace},
                                          opts=pulumi.ResourceOptions(parent=self))
        after = pulumi.ResourceOptions(parent=self, depends_on=[self.controller, models_ns])
        self.runtime = k8s.apiextensions.CustomResource(
            f"{name}-mlserver",
            api_version="serving.kserve.io/v1alpha1", kind="ServingRuntime",
            metadata={"name": "greenops-mlserver", "namespace": c.models_namespace},
            spec={
                "supportedModelFormats": [{"name": "mlflow", "version": "2", "autoSelect": True}],
                "protocolVersions": ["v2"],
                "containers": [{
                    "name": "kserve-container", "image": args.mlserver_image,
                    "env": [{"name": "MLSERVER_MODEL_IMPLEMENTATION", "value": "mlserver_mlflow.MLflowRuntime"},
                            {"name": "MLSERVER_HTTP_PORT", "value": "8080"}, {"name": "MLSERVER_GRPC_PORT", "value": "9000"},
                            {"name": "MODELS_DIR", "value": "/mnt/models"}],
                    "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
                }],
            },
            opts=after,
        )
        self.services = [
            k8s.apiextensions.CustomResource(
                f"{name}-{model}",
                api_version="serving.kserve.io/v1beta1", kind="InferenceService",
                metadata={"name": model, "namespace": c.models_namespace,
                          "annotations": {"serving.kserve.io/deploymentMode": c.deployment_mode}},
                spec={"predictor": {"model": {
                    "modelFormat": {"name": "mlflow"}, "protocolVersion": "v2", "runtime": "greenops-mlserver",
                    "storageUri": f"{c.storage_prefix}/{model}",
                }}},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.runtime]),
            )
            for model in forecaster_names(c.zones)
        ]
        self.register_outputs({"models": forecaster_names(c.zones)})
