"""Which reservations a listing returns: ``ReservationStore.list`` reads it, and ``GET /reservations``
takes it as its query parameters (each field one parameter, described here once)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from .text import Word


class ListingFilter(BaseModel):
    """Without ``all``, the active reservations; a field left None filters nothing. A value is a
    ``Word`` (greenops.reservations.text), as every value of its column is: a NUL byte or a 10 kB
    filter is refused by name before any database sees it."""

    model_config = ConfigDict(frozen=True)

    tenant: Word | None = None
    zone: Word | None = None
    region: Word | None = None
    provider: Word | None = None
    path: Word | None = None
    phase: Word | None = None
    key_prefix: Word | None = Field(default=None, description="keys starting so")
    ended_after: datetime | None = Field(
        default=None, description="with all: the active ones and those ending after this instant"
    )
    all: bool = Field(default=False, description="every phase, not only the active ones")
