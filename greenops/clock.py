"""The platform's clock: ``GREENOPS_NOW`` (RFC 3339) when set, so replays, demos and tests can
decide at a chosen instant through real processes; otherwise the system clock, in UTC."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # how the platform writes an instant: RFC 3339, UTC, whole seconds


def stamp(t: datetime) -> str:
    """``t`` (UTC) as the platform writes instants."""
    return t.strftime(TIME_FORMAT)


def system_clock(env: Mapping[str, str] | None = None) -> datetime:
    """Now: ``GREENOPS_NOW`` of ``env`` (default: this process's environment) when set. An inline
    Automation API program runs in the caller's process, whose environment is not the stack's."""
    override = (os.environ if env is None else env).get("GREENOPS_NOW")
    if override:
        return parse_time(override)
    return datetime.now(UTC)


def parse_time(text: str) -> datetime:
    """An RFC 3339 instant as written by the platform (``...Z``) or by Python (``+00:00``)."""
    return datetime.fromisoformat(text).astimezone(UTC)
