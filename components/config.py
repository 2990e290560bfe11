"""``greenops:platform``: which parts of the platform a stack installs, and how. Validated once."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.yaml"


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
    def _required(self) -> "AzureConfig":
        missing = [k for k in ("subscription_id", "tenant_id", "oidc_issuer_url") if self.enabled and not getattr(self, k)]
        if missing:
            raise ValueError(f"required when azure is enabled: {', '.join(to_camel(k) for k in missing)}")
        return self


class GcpConfig(_Section):
    enabled: bool = True
    project: str | None = None

    @model_validator(mode="after")
    def _required(self) -> "GcpConfig":
        if self.enabled and not self.project:
            raise ValueError("required when gcp is enabled: project")
        return self


class AwsConfig(_Section):
    enabled: bool = True
    region: str = "eu-west-1"
    oidc_provider_arn: str | None = Field(default=None, description="the cluster's IAM OIDC provider (IRSA)")
    oidc_issuer: str | None = Field(default=None, description="issuer host/path, without https://")

    @model_validator(mode="after")
    def _required(self) -> "AwsConfig":
        missing = [k for k in ("oidc_provider_arn", "oidc_issuer") if self.enabled and not getattr(self, k)]
        if missing:
            raise ValueError(f"required when aws is enabled: {', '.join(to_camel(k) for k in missing)}")
        return self


class PolicyConfig(_Section):
    enabled: bool = True
    namespace: str = "opa"
    bundle_service_url: str | None = Field(default=None, description="HTTP or OCI registry serving the bundle")
    bundle_service_type: Literal["http", "oci"] = "http"
    bundle_resource: str = "greenops/policy-bundle.tar.gz"
    webhook_url: str | None = Field(default=None, description="call OPA at this URL instead of its Service (local API server)")
    webhook_timeout_seconds: int = Field(default=10, ge=1, le=30)
    scheduler_url: str = "http://greenops-scheduler.greenops.svc:8080"


class SchedulerConfig(_Section):
    enabled: bool = True
    namespace: str = "greenops"
    image: str | None = None
    replicas: int = Field(default=1, ge=1, le=1, description="one replica: the capacity ledger is in memory")
    cpu: str = "500m"
    memory: str = "512Mi"
    source: str = "profiles"
    capacity_vcpu: float = 512


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
    storage_prefix: str = "s3://mlflow/forecasters"


class PlatformConfig(_Section):
    krateo: KrateoConfig = Field(default_factory=KrateoConfig)
    azure: AzureConfig = Field(default_factory=lambda: AzureConfig(enabled=False))
    gcp: GcpConfig = Field(default_factory=lambda: GcpConfig(enabled=False))
    aws: AwsConfig = Field(default_factory=lambda: AwsConfig(enabled=False))
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    mlflow: MlflowConfig = Field(default_factory=MlflowConfig)
    kserve: KserveConfig = Field(default_factory=KserveConfig)
    versions: dict[str, dict | str] = Field(default_factory=dict, description="overrides of components/versions.yaml")

    def version(self, key: str) -> dict | str:
        pinned = yaml.safe_load(VERSIONS_FILE.read_text())
        value = self.versions.get(key, pinned[key])
        return {**pinned[key], **value} if isinstance(pinned[key], dict) and isinstance(value, dict) else value
