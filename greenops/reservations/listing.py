"""Which reservations a listing returns: ``ReservationStore.list`` reads it, and ``GET /reservations``
takes it as its query parameters (each field one parameter, described here once)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class ListingFilter(BaseModel):
    """Without ``all``, the active reservations; a field left None filters nothing."""

    model_config = ConfigDict(frozen=True)

    tenant: str | None = None
    zone: str | None = None
    region: str | None = None
    provider: str | None = None
    path: str | None = None
    phase: str | None = None
    key_prefix: str | None = Field(default=None, max_length=512, description="keys starting so")
    ended_after: datetime | None = Field(
        default=None, description="with all: the active ones and those ending after this instant"
    )
    all: bool = Field(default=False, description="every phase, not only the active ones")
