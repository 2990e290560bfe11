"""Platform-admin policy settings shipped in the bundle as ``data.greenops.config``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from greenops.common.errors import GreenOpsError, field_errors
from greenops.common.user_yaml import load_yaml_file
from greenops.models.workload import DEFAULT_TENANT

DEFAULTS = Path(__file__).resolve().parent / "defaults.yaml"


class SchedulerCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_seconds: float = Field(default=4.0, gt=0, le=30, description="per attempt; within the webhook timeout")
    attempts: int = Field(default=2, ge=1, le=3, description="http.send attempts before failing closed")
    req_timeout: int = Field(default=3, gt=0, description="req_timeout sent to the scheduler, seconds")


ProviderName = Literal["azure", "gcp", "aws"]
ProviderRegion = Annotated[str, Field(pattern=r"^(azure|gcp|aws)/[a-z0-9-]{1,64}$")]


class TenantRules(BaseModel):
    """What the platform team allows one tenant, whatever its workloads ask (policies/rego/tenant_rules.rego;
    the scheduler checks it again, greenops/scheduler/tenant_rules.py). None: no rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    providers: list[ProviderName] | None = Field(default=None, min_length=1, description="allowed providers")
    regions: list[ProviderRegion] | None = Field(
        default=None, min_length=1, description="allowed provider/region pairs, e.g. azure/francecentral"
    )
    residency: Literal["eu"] | None = Field(default=None, description="eu: every workload's data stays in the EU")
    max_cpu: float | None = Field(default=None, gt=0, description="vCPUs per VM at most")
    max_memory_gb: float | None = Field(default=None, gt=0, description="GB of memory per VM at most")
    priority_class: str | None = Field(
        default=None,
        description="the tenant's priority class: its requests' default and their ceiling (a request may ask "
        "for a lower class, never a higher one)",
    )


class PolicySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default_providers: list[str] = Field(
        default_factory=lambda: ["azure", "gcp", "aws"],
        description="providers a workload may use when policy says nothing else",
    )
    tenant_vcpu_quota: dict[str, int] = Field(default_factory=dict, description="per-tenant cap on placed vCPUs")
    default_tenant_vcpu_quota: int | None = Field(
        default=None, gt=0, description="cap for tenants not listed; null = none"
    )
    tenant_rules: dict[str, TenantRules] = Field(
        default_factory=dict, description="per-tenant rules a workload cannot override (providers, regions, ...)"
    )
    scheduler: SchedulerCall = Field(default_factory=SchedulerCall)
    priority_classes: dict[str, int] = Field(
        default_factory=lambda: {"batch": 0, "standard": 100, "critical": 1000},
        min_length=1,
        description="the queue's priority classes and their values: a higher value is admitted first",
    )
    default_priority_class: str = Field(default="standard", description="the class of a tenant without one")
    preemption: Literal["off", "waiting"] = Field(
        default="off",
        description="waiting: a request with no room takes the hours of Scheduled bookings of lower classes "
        "that have not begun (they wait in the queue again, recorded with the reason); off: never",
    )
    preemption_notice_minutes: int = Field(
        default=30,
        ge=5,
        le=1440,
        description="a booking starting sooner than this is never preempted (its gate may be opening)",
    )

    @model_validator(mode="after")
    def _classes_known(self) -> PolicySettings:
        named = {"default_priority_class": self.default_priority_class} | {
            f"tenant_rules.{t}.priority_class": r.priority_class for t, r in self.tenant_rules.items()
        }
        for where, name in named.items():
            if name is not None and name not in self.priority_classes:
                raise ValueError(f"{where}: {name} is not one of priority_classes {sorted(self.priority_classes)}")
        return self

    def priority_of(self, tenant: str, asked: str | None) -> tuple[str, int]:
        """The class a request of ``tenant`` is queued in, and its value: the one asked for, at most
        the tenant's own (the default class when it has none). Raises ValueError naming the rule."""
        ceiling = self.rules(tenant).priority_class or self.default_priority_class
        name = asked or ceiling
        if name not in self.priority_classes:
            raise ValueError(f"{name} is not one of the priority classes {sorted(self.priority_classes)}")
        if self.priority_classes[name] > self.priority_classes[ceiling]:
            raise ValueError(
                f"tenant {tenant}'s rule priority_class {ceiling} ({self.priority_classes[ceiling]}) is below "
                f"{name} ({self.priority_classes[name]})"
            )
        return name, self.priority_classes[name]

    def rules(self, tenant: str) -> TenantRules:
        """The tenant's rules (none set: every field None)."""
        return self.tenant_rules.get(tenant) or TenantRules()

    def cap(self, tenant: str) -> float | None:
        """The tenant's vCPU quota, as greenops.quota.cap reads the same settings in the bundle."""
        limit = self.tenant_vcpu_quota.get(tenant, self.default_tenant_vcpu_quota)
        return None if limit is None else float(limit)

    def document(self) -> dict[str, Any]:
        """The bundle's data.greenops.config: these settings, and the default tenant (a fact of
        the workload model, not a setting)."""
        return {**self.model_dump(mode="json"), "default_tenant": DEFAULT_TENANT}


def load_policy_settings(path: Path | None = None) -> PolicySettings:
    path = path or DEFAULTS
    if not path.is_file():
        raise GreenOpsError(f"policy config {path} not found")
    raw = load_yaml_file(path, f"policy config {path}") or {}
    try:
        return PolicySettings.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{field or '(top level)'}: {msg}" for field, msg in field_errors(exc.errors()))
        raise GreenOpsError(f"policy config {path} is invalid: {problems}") from None
