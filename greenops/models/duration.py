"""Workload durations: ``6`` (whole hours), ``"6"``, ``"1.5"``, ``"6h"``, ``"90m"`` or ``"1h30m"``.

The accepted forms are the workload contract's (greenops.models.contract), which the policy and the
chart's schema read too."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from .contract import MAX_DURATION_HOURS, duration_hours

__all__ = ["MAX_DURATION_HOURS", "format_duration", "parse_duration"]


def parse_duration(value: object) -> timedelta:
    """Parse a duration; a bare number means hours, as in the thesis tuple ``D``. A timedelta (from
    Python code, never from a document) is only bounded."""
    if isinstance(value, timedelta):
        if value.total_seconds() <= 0 or value > timedelta(hours=MAX_DURATION_HOURS):
            raise ValueError(f"duration {value} is outside 0 to {MAX_DURATION_HOURS} h")
        return value
    hours = duration_hours(value)
    if isinstance(value, str) and value[-1] in "hm":
        # summed as timedeltas, exactly as written ("1h20m" is 80 minutes, not 1.333 h)
        return sum(
            (
                timedelta(hours=float(n)) if unit == "h" else timedelta(minutes=float(n))
                for n, unit in re.findall(r"([0-9.]+)([hm])", value)
            ),
            timedelta(),
        )
    return timedelta(hours=hours)


def format_duration(value: timedelta) -> str:
    """The shortest form that round-trips: ``6h``, ``90m`` or ``1h30m``, and minutes with a fraction
    when the duration is not whole minutes (``0.5m``, ``1h0.6m``): the Pulumi path sends the policy
    this form, and the cluster path's the spec as written, so a rounded form would give the two paths
    different workloads (a "0.5m" run rounded to "0m" is no run at all). Nine decimals of a minute
    are finer than the microseconds a timedelta keeps, and keep the form within the contract's length."""
    micros = value // timedelta(microseconds=1)
    hours, rest = divmod(micros, 3_600_000_000)
    if rest % 60_000_000:
        minutes = (Decimal(rest) / 60_000_000).quantize(Decimal("1e-9")).normalize()
        text = f"{minutes:f}m"
    else:
        text = f"{rest // 60_000_000}m" if rest else ""
    return f"{hours}h{text}" if hours and text else (text or f"{hours}h")
