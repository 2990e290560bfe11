"""What the record keeps beside a booking: the workload as policy saw it and policy's explanation.

Both come from the caller, are stored, and are served back to every reader (listings with
``detail``, the dashboard, ``greenops explain``). So they have a schema, a size bound and a depth
bound when they come in, and every reader goes through ``workload_of``/``explanation_of``, which never raise: a row
stored before the schema (or by hand) shows as "unknown", never as a 500 for everybody.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_WORKLOAD_BYTES = 16 * 1024
MAX_EXPLANATION_BYTES = 64 * 1024
# Policy's documents nest a handful of levels; 300 levels fit in 600 bytes, well within the size
# bounds, and overflowed pydantic's serialiser (a 500) before reaching the record.
MAX_DEPTH = 32
_Text = Annotated[str, Field(max_length=1024)]


class RecordedWorkload(BaseModel):
    """The fields readers use are typed; the rest (policy's normalised spec) is kept as sent."""

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, Field(min_length=1, max_length=253)]
    tenant: Annotated[str, Field(max_length=63)] | None = None
    deadline: _Text | None = None
    cpu: float | None = None
    memory: float | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, value: object) -> object:
        # JSON true would otherwise read as the number 1
        if isinstance(value, bool):
            raise ValueError("must not be a boolean")
        return value


def bounded(value: dict[str, Any] | None, limit: int, field: str) -> dict[str, Any] | None:
    """``value`` if it nests at most MAX_DEPTH levels and its JSON fits in ``limit`` bytes; else a
    ValueError naming the field and the bound. The depth first: serialising a deep value recurses."""
    if value is not None and depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise ValueError(f"{field} is nested deeper than {MAX_DEPTH} levels")
    if value is not None and len(json.dumps(value, separators=(",", ":"))) > limit:
        raise ValueError(f"{field} is larger than {limit} bytes of JSON")
    return value


def depth(value: object, beyond: int) -> int:
    """How many levels of objects and arrays ``value`` nests (a scalar: 0), counted without
    recursion and given up on past ``beyond``: the value has not been bounded yet."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > beyond:
            break
        pending.extend((child, level + 1) for child in children)
    return deepest


def workload_of(raw: object) -> dict[str, Any] | None:
    """The stored workload as it was sent, when it reads as one; None when it does not."""
    if not isinstance(raw, dict):
        return None
    try:
        RecordedWorkload.model_validate(raw)
    except ValidationError:
        return None
    return raw


def explanation_of(raw: object) -> dict[str, Any] | None:
    return raw if isinstance(raw, dict) else None
