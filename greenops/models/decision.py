"""A placement decision: where and when a workload runs, and on what."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, Field, computed_field, field_serializer, field_validator

from greenops.common.clock import stamp

from .workload import _Model

Intensity = Annotated[float, Field(ge=0, description="gCO2eq/kWh, mean over the run")]


class Decision(_Model):
    """The output of policy + scheduler + catalog for one workload."""

    provider: str
    region: str
    zone: str = Field(description="Electricity Maps zone id of the region")
    scheduling_time: AwareDatetime = Field(description="start time, UTC")
    vm_size: str
    image: str = Field(description="provider image reference: Azure URN, GCP image path or AWS AMI id")
    expected_intensity: Intensity | None = None
    baseline_intensity: Intensity | None = None
    decided_at: AwareDatetime | None = Field(
        default=None,
        description="the instant the decision was made: the baseline run starts then (none in "
        "decisions recorded before it was kept)",
    )
    preemptible: bool = Field(
        default=False,
        description="the scheduler may give its hours to a request of a higher class until shortly "
        "before its start (policy preemption: waiting): its gate checks the record first",
    )

    @field_validator("scheduling_time", "decided_at", mode="after")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return v.astimezone(UTC) if v else v

    @field_serializer("scheduling_time", "decided_at")
    def _ser_time(self, v: datetime | None) -> str | None:
        return stamp(v) if v else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def saving_percent(self) -> float | None:
        """Saving of the chosen run against the baseline (run now at the origin), in %."""
        if self.expected_intensity is None or not self.baseline_intensity:
            return None
        return round(100.0 * (1 - self.expected_intensity / self.baseline_intensity), 2)

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Decision:
        """Read back a decision written by ``document()`` (its computed fields are dropped)."""
        return cls.model_validate({k: v for k, v in doc.items() if k != "savingPercent"})

    def document(self) -> dict[str, Any]:
        """The decision as JSON with camelCase keys, including ``savingPercent``."""
        doc = self.model_dump(mode="json", by_alias=True)
        if not self.preemptible:
            del doc["preemptible"]  # as every decision made where preemption is off always was
        return doc
