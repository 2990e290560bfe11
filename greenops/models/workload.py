"""The generic workload: the thesis tuple VM = (MinCPU, MinRAM, D, DL, ML) plus placement intent.

Validation is done here, once, at the edge. Field names in user-facing documents are camelCase
(as in the VmTemplate spec); Python code uses snake_case attributes.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from greenops.common.clock import stamp

from . import contract, strings

# The bounds and written forms of every field are the workload contract's, which the policy and the
# chart's schema read too; imported from here by the code that used to find them here.
from .contract import MAX_CPU as MAX_CPU
from .contract import MAX_LATENCY_MS as MAX_LATENCY_MS
from .contract import MAX_MEMORY_GB as MAX_MEMORY_GB
from .contract import MIN_MEMORY_GB as MIN_MEMORY_GB
from .contract import NO_LATENCY_CONSTRAINT_MS as NO_LATENCY_CONSTRAINT_MS
from .duration import format_duration, parse_duration

if TYPE_CHECKING:
    from greenops.catalog import Catalog

# Workload names become Kubernetes object names with suffixes such as "-subnet" appended, and
# Azure/GCP resource names: short DNS-1123 labels (the rule is in .strings, shared with the chart
# and the policy).


# Whose quota a workload without a tenant counts against: the same on both paths, in the scheduler
# and in policy (the bundle carries it as data.greenops.config.default_tenant).
DEFAULT_TENANT = "default"


class DataResidency(str, Enum):
    EU = "eu"
    NONE = "none"


class Provisioning(str, Enum):
    """Who creates a placed workload's VM: a cloud operator in the cluster, from Kubernetes objects
    (the default), or the stack itself, through the cloud's own Pulumi provider."""

    OPERATOR = "operator"
    DIRECT = "direct"


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
    )


def _catalog(info: ValidationInfo) -> Catalog:
    from greenops.catalog import load_catalog

    ctx = info.context or {}
    return ctx.get("catalog") or load_catalog()


def _now(info: ValidationInfo) -> datetime:
    ctx = info.context or {}
    now = ctx.get("now") or datetime.now(UTC)
    return now.astimezone(UTC)


class RunEnv(_Model):
    """An environment variable of the run whose value is a secret: its name, and its value's key."""

    name: str = Field(pattern=contract.ENV_NAME_PATTERN, max_length=64)
    secret: str = Field(pattern=contract.SECRET_KEY_PATTERN, max_length=253)


class Run(_Model):
    """What the placed VM runs: a shell script, started once at its first boot; the VM powers itself
    off when the script ends (greenops.renderers.user_data)."""

    # kept exactly as written: a script's whitespace is its own
    model_config = ConfigDict(**{**_Model.model_config, "str_strip_whitespace": False})

    script: str = Field(
        min_length=1, max_length=contract.MAX_SCRIPT_CHARS, description="a shell script, run as root at first boot"
    )
    env: tuple[RunEnv, ...] = Field(
        default=(),
        max_length=contract.MAX_RUN_ENV,
        description="environment variables the script gets from secrets, by key (never a value here)",
    )

    @field_validator("env")
    @classmethod
    def _distinct_names(cls, v: tuple[RunEnv, ...]) -> tuple[RunEnv, ...]:
        names = [e.name for e in v]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"env names {', '.join(repeated)} more than once")
        return v


class Workload(_Model):
    """A delay-tolerant VM workload, provider-agnostic.

    Validate with ``Workload.model_validate(data, context={"now": ..., "catalog": ...})``; both
    context keys are optional (defaults: the current time, the embedded catalog). With
    ``"check_deadline": False`` the deadline is not compared with now (an already placed workload).

    Every field is read in the contract's one written form (greenops.models.contract): no spaces
    trimmed, no case folded, no comma lists split, as the policy and the VmTemplate CRD read it.
    """

    model_config = ConfigDict(**{**_Model.model_config, "str_strip_whitespace": False})

    name: str = Field(description="DNS-1123 label, at most 40 characters; names every derived object")
    # strict: a number, as in the VmTemplate's schema and the policy, not a string that parses as one
    cpu: Annotated[int, Field(strict=True, gt=0, le=MAX_CPU, description="minimum vCPUs (MinCPU)")]
    memory: Annotated[
        float, Field(strict=True, gt=0, le=MAX_MEMORY_GB, allow_inf_nan=False, description="minimum RAM in GB (MinRAM)")
    ]
    duration: timedelta = Field(description="run time D: " + contract.DURATION_EXPECTED)
    deadline: AwareDatetime = Field(description="DL, RFC 3339 with an offset; stored in UTC")
    max_latency: Annotated[
        int, Field(strict=True, gt=0, le=MAX_LATENCY_MS, description="ML in ms from originRegion; 2000 = no constraint")
    ] = NO_LATENCY_CONSTRAINT_MS
    origin_region: str = Field(description="cloud region the latency is measured from")
    eligible_providers: tuple[str, ...] = Field(
        default=(), validate_default=True, description="subset of the catalog's providers; empty = all"
    )
    data_residency: DataResidency = DataResidency.NONE
    tenant: str = DEFAULT_TENANT
    provider: str | None = Field(default=None, description="explicitly requested provider (policy may refuse it)")
    region: str | None = Field(default=None, description="explicitly requested region (policy may refuse it)")
    provisioning: Provisioning | None = Field(
        default=None, description="operator or direct; none: the stack's greenops:provisioning"
    )
    run: Run | None = Field(default=None, description="what the VM runs (" + contract.RUN_EXPECTED + "); none: nothing")
    image: str | None = Field(
        default=None, description="the OS image by name, one of the catalog's (data/images.json); none: its default"
    )

    @field_validator("image")
    @classmethod
    def _known_image(cls, v: str | None, info: ValidationInfo) -> str | None:
        names = _catalog(info).image_names
        if v is not None and v not in names:
            raise ValueError(f"{contract.shown(v)} is not {contract.IMAGE_EXPECTED.format(known=', '.join(names))}")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return strings.check("vmName", v)

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, v: str) -> str:
        return strings.check("tenant", v)

    @field_validator("cpu", mode="before")
    @classmethod
    def _cpu_integral(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("cpu must be a whole number of vCPUs")
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

    @field_validator("max_latency", mode="before")
    @classmethod
    def _max_latency_integral(cls, v: Any) -> Any:
        # A whole number written as a float is the same JSON number (the policy reads 2000.0 as
        # 2000), and Pulumi hands a dynamic provider every number as a float: read it as the int.
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

    @field_validator("memory")
    @classmethod
    def _memory_floor(cls, v: float) -> float:
        if v < MIN_MEMORY_GB:
            raise ValueError(f"{v:g} GB is below {MIN_MEMORY_GB:g} GB (1 MB), the least memory a workload asks for")
        return v

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> timedelta:
        return parse_duration(v)

    @field_validator("deadline", mode="before")
    @classmethod
    def _deadline_form(cls, v: Any) -> Any:
        # A datetime comes from Python code; a document writes the contract's RFC 3339 form only
        # (no epoch numbers, no missing seconds, no space for the "T").
        if isinstance(v, datetime):
            return v
        problem = contract.deadline_problem(v)
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("deadline", mode="after")
    @classmethod
    def _deadline_utc(cls, v: datetime) -> datetime:
        try:
            return v.astimezone(UTC)
        except OverflowError:  # year 1 east of UTC, or year 9999 west of it, is outside Python's dates
            raise ValueError("deadline is outside the years 1 to 9999 in UTC") from None

    @field_validator("eligible_providers", mode="before")
    @classmethod
    def _providers_list(cls, v: Any, info: ValidationInfo) -> Any:
        expected = contract.PROVIDERS_EXPECTED.format(known=", ".join(_catalog(info).providers))
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"{contract.shown(v)} is not valid: {expected}")
        repeated = sorted({p for p in v if isinstance(p, str) and list(v).count(p) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed more than once: {expected}")
        return v

    @field_validator("eligible_providers", mode="after")
    @classmethod
    def _known_providers(cls, v: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        known = _catalog(info).providers
        if not v:
            return tuple(known)
        unknown = [p for p in v if p not in known]
        if unknown:
            raise ValueError(f"unknown provider(s) {', '.join(unknown)}: choose from {', '.join(known)} (lowercase)")
        return v

    @field_validator("provider", mode="after")
    @classmethod
    def _known_provider(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        known = _catalog(info).providers
        if v not in known:
            raise ValueError(f"unknown provider {contract.shown(v)}: choose from {', '.join(known)} (lowercase)")
        return v

    @field_validator("origin_region", mode="after")
    @classmethod
    def _known_origin(cls, v: str, info: ValidationInfo) -> str:
        if not _catalog(info).find_regions(v):
            raise ValueError(f"unknown origin region {v!r}: it is not a region of any provider in the catalog")
        return v

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Workload:
        now = _now(info)
        earliest_end = now + self.duration
        # The deadline is a constraint on placing the workload; once placed, a passing deadline
        # must not make the declaration itself invalid (context {"check_deadline": False}).
        check_deadline = (info.context or {}).get("check_deadline", True)
        if check_deadline and self.deadline < earliest_end:
            raise ValueError("deadline " + contract.room_problem(stamp(self.deadline), stamp(earliest_end)))
        if self.provider and self.provider not in self.eligible_providers:
            raise ValueError(
                f"requested provider {self.provider!r} is not among eligibleProviders {list(self.eligible_providers)}"
            )
        if self.region:
            matches = _catalog(info).find_regions(self.region)
            if not matches:
                raise ValueError(f"unknown requested region {self.region!r}")
            if self.provider and all(r.provider != self.provider for r in matches):
                raise ValueError(f"requested region {self.region!r} is not a region of provider {self.provider!r}")
        return self

    @field_serializer("duration")
    def _ser_duration(self, v: timedelta) -> str:
        return format_duration(v)

    @field_serializer("deadline")
    def _ser_deadline(self, v: datetime) -> str:
        return stamp(v)

    @property
    def duration_hours(self) -> float:
        return self.duration.total_seconds() / 3600

    def spec(self) -> dict[str, Any]:
        """The workload as a JSON document with camelCase keys (stack config, OPA input). How it is
        provisioned is not part of what it is: switching the mode neither re-places it nor changes
        its reservation key. A workload without ``run`` or ``image`` is written without that key, so its
        spec and key stay what they were before the field existed."""
        leave_out = {"provisioning"} | {k for k in ("run", "image") if getattr(self, k) is None}
        spec = self.model_dump(mode="json", by_alias=True, exclude=leave_out)
        if self.run is not None and not self.run.env:
            del spec["run"]["env"]  # as before env existed: its spec and key stay
        return spec


def spec_digest(spec: dict[str, Any]) -> str:
    """A short digest of a workload spec: a placement is booked, and recorded, under it."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
