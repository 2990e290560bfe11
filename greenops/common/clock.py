"""The platform's clock: ``GREENOPS_NOW`` (RFC 3339) when set, so replays, demos and tests can
decide at a chosen instant through real processes; else the instant in the file
``GREENOPS_CLOCK_FILE`` names, re-read at every call, so a simulated clock can be played forward
under a process that keeps running (the cluster path's controller in the demo and its tests);
otherwise the system clock, in UTC."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

# The platform's clocks are plain callables: system_clock, or a test's fixed instant.
Clock = Callable[[], datetime]

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # how the platform writes an instant: RFC 3339, UTC, whole seconds


def stamp(t: datetime) -> str:
    """``t`` (UTC) as the platform writes instants."""
    return t.strftime(TIME_FORMAT)


def system_clock(env: Mapping[str, str] | None = None) -> datetime:
    """Now: ``GREENOPS_NOW`` of ``env`` (default: this process's environment) when set. An inline
    Automation API program runs in the caller's process, whose environment is not the stack's."""
    env = os.environ if env is None else env
    override = env.get("GREENOPS_NOW")
    if override:
        return parse_time(override)
    clock_file = env.get("GREENOPS_CLOCK_FILE")
    if clock_file:
        return clock_file_time(clock_file)
    return datetime.now(UTC)


def clock_file_time(path: str) -> datetime:
    """The simulated instant in ``path`` (written whole by ``set_clock_file``)."""
    try:
        return parse_time(Path(path).read_text(encoding="utf-8").strip())
    except OSError as exc:
        raise ValueError(f"GREENOPS_CLOCK_FILE {path}: {exc.strerror}") from None


def set_clock_file(path: Path, t: datetime) -> None:
    """Move a simulated clock: written beside and renamed, so a reader sees the old or the new instant."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(stamp(t), encoding="utf-8")
    tmp.replace(path)


def parse_time(text: str) -> datetime:
    """An RFC 3339 instant as written by the platform (``...Z``) or by Python (``+00:00``)."""
    return datetime.fromisoformat(text).astimezone(UTC)
