"""ModelTracking (MLflow with a PostgreSQL backend store and an S3 artifact store) and
ModelServing (KServe, the MLflow-capable MLServer runtime, one InferenceService per forecast
zone plus the generic fallback) (thesis §3.7).

One pair of object-store keys (the Pulumi secrets greenops:s3AccessKey / s3SecretKey) reaches every
party through Kubernetes Secrets, never through Helm values or pod specs in plaintext:
- SeaweedFS's S3 gateway: an identity in its s3 config JSON (``SEAWEEDFS_CONFIG_SECRET``, the chart's
  ``existingConfigSecret``);
- MLflow: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` from ``mlflow-credentials``
  (the chart's ``artifactRoot.s3.existingSecret``), with the database password beside them;
- KServe's storage initializer: a Secret in the models namespace annotated with the endpoint,
  attached to the ServiceAccount every InferenceService runs as.
``greenops-forecast publish`` writes the models with the same keys (greenops/forecasting/publish.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pulumi
import pulumi_kubernetes as k8s

from components.hardening import POD_SECURITY, Resources, container_security, image_fields
from components.helm import postgresql, release
from components.pins import ChartPin
from components.platform_config import KserveConfig, MlflowConfig
from greenops.models.forecast_names import served_models, storage_uri

# The variable names boto3 reads, MLflow's chart sets from its existingSecret, and KServe's storage
# initializer is configured to read (kserve.storage.s3.*Name, pinned below to these).
S3_KEY_NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
SEAWEEDFS_CONFIG_SECRET, SEAWEEDFS_CONFIG_KEY = "seaweedfs-s3-config", "seaweedfs_s3_config"
SEAWEEDFS_S3_PORT = 8333
MODELS_S3_SECRET, MODELS_SERVICE_ACCOUNT = "greenops-models-s3", "greenops-models"
KSERVE = "serving.kserve.io"
MLSERVER_RESOURCES = Resources(cpu="250m", memory="512Mi", cpu_limit="1", memory_limit="1Gi")
# KServe's controller: the chart's own security context already drops everything and runs as non-root
KSERVE_CONTROLLER_RESOURCES = Resources(cpu="100m", memory="300Mi", cpu_limit="500m")


def seaweedfs_s3_config(access_key: str, secret_key: str) -> str:
    """SeaweedFS's S3 identity file: one identity with the platform's keys. Admin lets
    ``greenops-forecast publish`` create the bucket of a storage prefix that does not exist yet."""
    return json.dumps(
        {
            "identities": [
                {
                    "name": "greenops",
                    "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
    )


def kserve_s3_annotations(endpoint: str | None) -> dict[str, str]:
    """KServe's per-Secret S3 settings (pkg/credentials/s3): host[:port] without scheme, plus
    whether to use HTTPS. None means AWS S3 itself, KServe's default."""
    if endpoint is None:
        return {}
    url = urlsplit(endpoint)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise ValueError(f"the S3 endpoint must be an http(s):// URL, got {endpoint!r}")
    return {f"{KSERVE}/s3-endpoint": url.netloc, f"{KSERVE}/s3-usehttps": "1" if url.scheme == "https" else "0"}


@dataclass
class ModelTrackingArgs:
    config: MlflowConfig
    mlflow_chart: ChartPin
    postgresql_chart: ChartPin
    seaweedfs_chart: ChartPin
    db_password: pulumi.Input[str]
    s3_access_key: pulumi.Input[str]
    s3_secret_key: pulumi.Input[str]


CREDENTIALS, DATABASE, DB_USER = "mlflow-credentials", "mlflow", "mlflow"


class ModelTracking(pulumi.ComponentResource):
    def __init__(self, name: str, args: ModelTrackingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:ModelTracking", name, None, opts)
        c = args.config
        ns = c.namespace
        namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name=ns), opts=pulumi.ResourceOptions(parent=self)
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        access_key, secret_key = S3_KEY_NAMES
        self.credentials = k8s.core.v1.Secret(
            f"{name}-credentials",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=CREDENTIALS, namespace=ns),
            string_data=pulumi.Output.secret(
                {
                    "username": DB_USER,
                    "postgres-password": args.db_password,
                    access_key: args.s3_access_key,
                    secret_key: args.s3_secret_key,
                }
            ),
            opts=in_ns,
        )
        # The backend store: its own PostgreSQL, password from the secret above.
        self.database = postgresql(
            name,
            args.postgresql_chart,
            ns,
            DATABASE,
            DB_USER,
            (CREDENTIALS, "postgres-password"),
            self,
            depends_on=[self.credentials],
        )
        endpoint = c.artifact_endpoint
        self.object_store = None
        if endpoint is None:
            # No S3 endpoint given: SeaweedFS with the filer's S3 gateway, as in the thesis. Its identities
            # come from our Secret (the chart would otherwise generate keys nobody else knows), and the
            # chart's post-install hook creates MLflow's bucket (it does so only for filer.s3).
            self.s3_config = k8s.core.v1.Secret(
                f"{name}-seaweedfs-s3-config",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=SEAWEEDFS_CONFIG_SECRET, namespace=ns),
                string_data={
                    SEAWEEDFS_CONFIG_KEY: pulumi.Output.secret(
                        pulumi.Output.all(args.s3_access_key, args.s3_secret_key).apply(
                            lambda keys: seaweedfs_s3_config(*keys)
                        )
                    )
                },
                opts=in_ns,
            )
            self.object_store = release(
                f"{name}-seaweedfs",
                args.seaweedfs_chart,
                ns,
                {
                    "filer": {
                        "s3": {
                            "enabled": True,
                            "port": SEAWEEDFS_S3_PORT,
                            "enableAuth": True,
                            "existingConfigSecret": SEAWEEDFS_CONFIG_SECRET,
                            "createBuckets": [{"name": c.bucket}],
                        }
                    }
                },
                self,
                depends_on=[self.s3_config],
            )
            # the chart names its S3 Service after the chart, not the release
            endpoint = f"http://seaweedfs-s3.{ns}.svc:{SEAWEEDFS_S3_PORT}"
        self.endpoint = endpoint
        # No credential in the values: the chart reads the database login and the S3 keys from the Secret.
        self.server = release(
            f"{name}-mlflow",
            args.mlflow_chart,
            ns,
            {
                "backendStore": {
                    "databaseMigration": True,
                    "postgres": {
                        "enabled": True,
                        "host": f"{name}-postgresql.{ns}.svc",
                        "port": 5432,
                        "database": DATABASE,
                    },
                    "existingDatabaseSecret": {
                        "name": CREDENTIALS,
                        "usernameKey": "username",
                        "passwordKey": "postgres-password",
                    },
                },
                "artifactRoot": {
                    "proxiedArtifactStorage": True,
                    "s3": {
                        "enabled": True,
                        "bucket": c.bucket,
                        "existingSecret": {
                            "name": CREDENTIALS,
                            "keyOfAccessKeyId": access_key,
                            "keyOfSecretAccessKey": secret_key,
                        },
                    },
                },
                "extraEnvVars": {"MLFLOW_S3_ENDPOINT_URL": endpoint},
            },
            self,
            depends_on=[self.database] + ([self.object_store] if self.object_store else []),
        )
        self.tracking_uri = f"http://{name}-mlflow.{ns}.svc:5000"
        self.register_outputs({"trackingUri": self.tracking_uri, "artifactEndpoint": endpoint})


@dataclass
class ModelServingArgs:
    config: KserveConfig
    crd_chart: ChartPin
    chart: ChartPin
    mlserver_image: str
    # Where storageUri s3://... points: the tracking store's endpoint (ModelTracking.endpoint), or None
    # for AWS S3; read with the platform's object-store keys.
    s3_endpoint: str | None = None
    s3_access_key: pulumi.Input[str] | None = None
    s3_secret_key: pulumi.Input[str] | None = None
    # what the releases wait for: cert-manager (the controller's webhook certificate, the CRDs' inject-ca-from)
    after: list[pulumi.Resource] = field(default_factory=list)


def forecaster_names(zones: list[str]) -> list[str]:
    """The model names the scheduler's OIP source asks for (greenops.models.forecast_names)."""
    return served_models(zones)


class ModelServing(pulumi.ComponentResource):
    def __init__(self, name: str, args: ModelServingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:ModelServing", name, None, opts)
        c = args.config
        self.crds = release(f"{name}-crds", args.crd_chart, c.namespace, {}, self, depends_on=args.after)
        access_key, secret_key = S3_KEY_NAMES
        self.controller = release(
            f"{name}-controller",
            args.chart,
            c.namespace,
            {
                "kserve": {
                    "controller": {
                        "deploymentMode": c.deployment_mode,
                        "resources": KSERVE_CONTROLLER_RESOURCES.json(),
                    },
                    "storage": {"s3": {"accessKeyIdName": access_key, "secretAccessKeyName": secret_key}},
                },
            },
            self,
            depends_on=[self.crds, *args.after],
        )
        models_ns = k8s.core.v1.Namespace(
            f"{name}-models-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=c.models_namespace),
            opts=pulumi.ResourceOptions(parent=self),
        )
        after = pulumi.ResourceOptions(parent=self, depends_on=[self.controller, models_ns])
        self.service_account = self._storage_credentials(name, args, models_ns)
        self.runtime = k8s.apiextensions.CustomResource(
            f"{name}-mlserver",
            api_version="serving.kserve.io/v1alpha1",
            kind="ServingRuntime",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="greenops-mlserver", namespace=c.models_namespace),
            spec={
                "supportedModelFormats": [{"name": "mlflow", "version": "2", "autoSelect": True}],
                "protocolVersions": ["v2"],
                "containers": [
                    {
                        "name": "kserve-container",
                        **image_fields(args.mlserver_image),
                        "env": [
                            {"name": "MLSERVER_MODEL_IMPLEMENTATION", "value": "mlserver_mlflow.MLflowRuntime"},
                            {"name": "MLSERVER_HTTP_PORT", "value": "8080"},
                            {"name": "MLSERVER_GRPC_PORT", "value": "9000"},
                            {"name": "MODELS_DIR", "value": "/mnt/models"},
                        ],
                        "resources": MLSERVER_RESOURCES.json(),
                        # MLServer writes its metrics and worker state under its working directory,
                        # in the image: the root filesystem stays writable (the rest is restricted)
                        "securityContext": container_security(read_only_root=False),
                    }
                ],
            },
            opts=after,
        )
        self.services = [
            k8s.apiextensions.CustomResource(
                f"{name}-{model}",
                api_version="serving.kserve.io/v1beta1",
                kind="InferenceService",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=model,
                    namespace=c.models_namespace,
                    annotations={"serving.kserve.io/deploymentMode": c.deployment_mode},
                ),
                spec={
                    "predictor": {
                        "serviceAccountName": MODELS_SERVICE_ACCOUNT,
                        # the pod (MLServer and KServe's storage initializer) never calls the API: the
                        # controller reads the account's S3 Secret and hands it over as variables
                        "automountServiceAccountToken": False,
                        "securityContext": POD_SECURITY,
                        "model": {
                            "modelFormat": {"name": "mlflow"},
                            "protocolVersion": "v2",
                            "runtime": "greenops-mlserver",
                            "storageUri": storage_uri(c.storage_prefix, model),
                        },
                    }
                },
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.runtime, self.service_account]),
            )
            for model in forecaster_names(c.zones)
        ]
        self.register_outputs({"models": forecaster_names(c.zones)})

    def _storage_credentials(self, name: str, args: ModelServingArgs, models_ns: pulumi.Resource) -> pulumi.Resource:
        """The ServiceAccount the InferenceServices run as. With an s3:// storage prefix it carries the
        Secret KServe's storage initializer reads the keys and the endpoint from."""
        c = args.config
        opts = pulumi.ResourceOptions(parent=self, depends_on=[models_ns])
        secrets: list[k8s.core.v1.ObjectReferenceArgs] = []
        if c.storage_prefix.startswith("s3://"):
            if args.s3_access_key is None or args.s3_secret_key is None:
                raise ValueError(
                    f"greenops:platform.kserve: storagePrefix {c.storage_prefix} needs the object "
                    "store's keys: set the secrets greenops:s3AccessKey and greenops:s3SecretKey"
                )
            access_key, secret_key = S3_KEY_NAMES
            self.storage_secret = k8s.core.v1.Secret(
                f"{name}-models-s3",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=MODELS_S3_SECRET,
                    namespace=c.models_namespace,
                    annotations=kserve_s3_annotations(args.s3_endpoint),
                ),
                string_data=pulumi.Output.secret({access_key: args.s3_access_key, secret_key: args.s3_secret_key}),
                opts=opts,
            )
            secrets = [k8s.core.v1.ObjectReferenceArgs(name=MODELS_S3_SECRET)]
            opts = pulumi.ResourceOptions(parent=self, depends_on=[models_ns, self.storage_secret])
        return k8s.core.v1.ServiceAccount(
            f"{name}-models-sa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=MODELS_SERVICE_ACCOUNT, namespace=c.models_namespace),
            secrets=secrets or None,
            opts=opts,
        )
