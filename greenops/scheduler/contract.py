"""The bodies of ``POST /scheduling`` and ``PUT /reservations/{key}``: the thesis contract, and the
optional fields the reservation record adds to it (see the service's docstring in api.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from greenops.common.instants import UtcInstant
from greenops.models.workload import DEFAULT_TENANT
from greenops.reservations.text import Word
from greenops.scheduler.recorded import MAX_EXPLANATION_BYTES, MAX_WORKLOAD_BYTES, RecordedWorkload, bounded
from greenops.search.algorithm import Rule

# A Kubernetes label value, as tenants are on both paths
Name = Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")]
# An Electricity Maps zone; a request names at most MAX_ZONES of them
Zone = Annotated[str, Field(min_length=1, max_length=64)]
MAX_ZONES = 500


class SchedulingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    number_of_jobs: Annotated[int, Field(strict=True, ge=1, le=10000)] = 1
    eligible_regions: list[Zone] = Field(min_length=1, max_length=MAX_ZONES)
    deadline: UtcInstant
    duration: Annotated[float, Field(strict=True, gt=0, le=24 * 31, description="hours")]
    # The record counts whole milli-vCPUs: less than one would book nothing (1e-300 x 10 000 jobs
    # booked 0.0 vCPU) and a memory below a megabyte is no VM.
    cpu: Annotated[float, Field(strict=True, ge=0.001, le=100000, description="vCPUs; at least one millicore")]
    memory: Annotated[float, Field(strict=True, ge=0.001, le=1000000, description="GB")]
    req_timeout: Annotated[float, Field(strict=True, gt=0, le=300, description="seconds")] = 10
    origin_zone: Zone | None = Field(default=None, description="zone of the origin region, for the baseline")
    earliest_start: UtcInstant | None = Field(
        default=None,
        description="no start before this instant: the caller's clock, e.g. when a workload that "
        "missed its window is placed again from the time its reconcile ran",
    )
    # Beyond the thesis contract: the reservation record (all optional, so thesis clients still work).
    # A reservation key, in a body and in a path alike (greenops.scheduler.api.keys): the record's Word,
    # printable ASCII without spaces, 512 at most (its column); a NUL byte or a 10 kB key is refused by
    # name before any database sees it.
    key: Word | None = Field(
        default=None,
        description="the placement's stable key (stack/workload, or namespace/name/uid): the same "
        "key with the same request is answered from the record and books nothing new; "
        "a changed request replaces the booking",
    )
    tenant: Name | None = Field(
        default=None,
        description="whose quota the booking counts against: one of the tenants the caller's credential "
        "acts for (403 otherwise); when absent, its only tenant, else " + DEFAULT_TENANT,
    )
    path: Literal["pulumi", "cluster", "api"] | None = Field(
        default=None,
        description="where the placement came from: one of the paths the caller's credential books on "
        "(403 otherwise); when absent, its only path, else api",
    )
    tenant_quota_vcpu: Annotated[float, Field(strict=True, gt=0)] | None = Field(
        default=None,
        description="optional: the quota is policy's, which the scheduler reads itself; a value above it "
        "is refused (403), a lower one is kept",
    )
    # the first placement's provider and region are the record's columns (16 and 64 at most)
    regions: dict[Zone, Annotated[str, Field(pattern=r"^(azure|gcp|aws)/[a-z0-9-]{1,64}$")]] = Field(
        default_factory=dict,
        max_length=MAX_ZONES,
        description="zone -> provider/region the caller maps it to, recorded with the booking",
    )
    dry_run: bool = Field(default=False, description="decide without booking (a dry-run admission)")
    new_key: bool = Field(
        default=False,
        description="the key must be new (an admission CREATE's): a reservation already under it is never "
        "changed (409), only the very same request replayed",
    )
    workload: dict[str, Any] | None = Field(
        default=None,
        description="the workload as policy saw it, kept for re-evaluation "
        f"(at most {MAX_WORKLOAD_BYTES} bytes of JSON)",
    )
    explanation: dict[str, Any] | None = Field(
        default=None,
        description="policy's account of the eligible set (its constraint chain, and what each zone "
        f"maps back to), kept with the booking for `greenops explain`; not part of the spec (at most "
        f"{MAX_EXPLANATION_BYTES} bytes of JSON)",
    )
    queue: bool = Field(
        default=False,
        description="when no window has room now, but one could before the deadline once capacity or quota "
        "frees, record the request as Pending in the queue and answer 202 with its position (not part "
        "of the spec: a retry with or without it is the same request); false: 409 as the thesis contract",
    )
    priority_class: Name | None = Field(
        default=None,
        description="the queue's class of this request: one of the policy's priority_classes, at most the "
        "tenant's own (403 above it); when absent, the tenant's",
    )
    rule: Rule = Field(
        default="point",
        description="point: the lowest forecast wins; sure: move away from running at once (at the "
        "origin) only when the forecast's record on this decision shows a gain beyond its "
        "uncertainty; interval: only when the prediction intervals do not overlap",
    )

    @field_validator("workload")
    @classmethod
    def _workload_fits(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        # Checked against the schema but kept as sent: the record serves it back, and its spec hash
        # (what a retry is matched by) is the caller's document, not a re-serialisation of it.
        if v is not None:
            bounded(v, MAX_WORKLOAD_BYTES, "workload")  # first: its bounds keep the schema's check short
            RecordedWorkload.model_validate(v)
        return v

    @field_validator("explanation")
    @classmethod
    def _explanation_fits(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return bounded(v, MAX_EXPLANATION_BYTES, "explanation")

    @field_validator("eligible_regions")
    @classmethod
    def _dedupe(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))


class PlacementOut(BaseModel):
    scheduling_location: str
    scheduling_time: str
    expected_intensity: float = Field(description="mean gCO2eq/kWh over the run")


class Considered(PlacementOut):
    run_now_intensity: float = Field(description="mean gCO2eq/kWh of starting at once in this zone")


class SchedulingResponse(PlacementOut):
    key: str | None = Field(default=None, description="the reservation's key (none for a dry run)")
    baseline_intensity: float | None = Field(description="mean gCO2eq/kWh of the baseline run")
    baseline: str = Field(description="what the baseline is")
    saving_percent: float | None
    source: str
    placements: list[PlacementOut] = Field(description="every job of the batch, in placement order")
    searched_from: str | None = Field(
        default=None,
        description="where the search began (the later of now and earliest_start): the baseline run starts then",
    )
    rule: Rule = Field(default="point", description="the rule that decided")
    considered: list[Considered] | None = Field(
        default=None,
        description="each eligible zone's best window with room, best first: the alternatives the "
        "(first) job's placement beat; absent from answers recorded before it was kept",
    )
    preemptible: bool = Field(
        default=False,
        description="a request of a higher class may take these hours until preemption_notice_minutes "
        "before the start (policy preemption: waiting); read the reservation before starting",
    )


class PendingResponse(BaseModel):
    """The answer of a request recorded as Pending in the queue (HTTP 202)."""

    key: str | None = Field(description="the reservation's key (none for a dry run)")
    phase: Literal["Pending"] = "Pending"
    position: int | None = Field(description="1 for the next to be admitted, across every tenant (none for a dry run)")
    reason: str = Field(description="why no window has room now")
    priority_class: str
    priority: int
    queued_at: str | None = Field(description="when it joined the queue (none for a dry run)")
    deadline: str
    searched_from: str = Field(description="the later of now and earliest_start: no start before it")
