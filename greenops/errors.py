"""Errors that carry a message fit for the person who wrote the workload or the stack config.

Every error names the object it is about and the reason, so callers print ``str(err)`` and never
a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


class GreenOpsError(Exception):
    """Base class: a user-facing failure with a self-explanatory message."""


class CatalogError(GreenOpsError):
    """A fact is missing from, or inconsistent in, the curated catalog in ``data/``."""


class NoFittingSize(CatalogError):
    """No VM size in a region offers the requested vCPU and memory."""


class RenderError(GreenOpsError):
    """A decision cannot be turned into provider manifests (e.g. missing settings)."""


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a readable path: ("kinds", 0, "scope") -> "kinds[0].scope"."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def field_errors(
    errors: Sequence[ErrorDetails], reason: Callable[[ErrorDetails], str | None] | None = None
) -> list[tuple[str, str]]:
    """(field path, message) for each of a pydantic ValidationError's ``errors()``, without
    pydantic's "Value error, " prefix: the one way every edge names a bad field. ``reason`` may
    word an error better than pydantic does; where it returns None, pydantic's message stands."""
    return [
        (field_path(e["loc"]), (reason(e) if reason else None) or e["msg"].removeprefix("Value error, "))
        for e in errors
    ]
