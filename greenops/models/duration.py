"""Workload durations: ``6`` (hours), ``"6h"``, ``"90m"`` or ``"1h30m"``."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from greenops.errors import quote

_PART = re.compile(r"(\d+(?:\.\d+)?)([hm])")
_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?[hm])+$")
# The scheduler places runs of at most 31 days (greenops/scheduler/contract.py): a longer one
# cannot be placed, and past some thousands of years it cannot even be a date.
MAX_DURATION_HOURS = 24 * 31


def parse_duration(value: object) -> timedelta:
    """Parse a duration; a bare number means hours, as in the thesis tuple ``D``."""
    parts: list[tuple[float, str]] = []
    if isinstance(value, timedelta):
        hours = value.total_seconds() / 3600
    elif isinstance(value, bool):
        raise ValueError("duration must be a number of hours or a string such as '6h' or '90m'")
    elif isinstance(value, (int, float)):
        hours = _float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            hours = float(text)
        elif _WHOLE.fullmatch(text):
            parts = [(float(amount), unit) for amount, unit in _PART.findall(text)]
            hours = sum(amount if unit == "h" else amount / 60 for amount, unit in parts)
        else:
            raise ValueError(
                f"malformed duration {quote(value)}: use hours ('6', '6h') or minutes ('90m'), e.g. '1h30m'"
            )
    else:
        raise ValueError(f"duration must be a number of hours or a string such as '6h', not {type(value).__name__}")
    # checked as a number before a timedelta is built: 1e20 hours overflows one
    if math.isnan(hours) or hours <= 0:
        raise ValueError(f"duration must be positive, got {quote(value)}")
    if hours > MAX_DURATION_HOURS:
        raise ValueError(
            f"duration {quote(value)} is longer than {MAX_DURATION_HOURS} h ({MAX_DURATION_HOURS // 24} days), "
            "the longest run the scheduler places"
        )
    if isinstance(value, timedelta):
        return value
    if parts:  # summed as timedeltas, exactly as written ("1h20m" is 80 minutes, not 1.333 h)
        return sum((timedelta(hours=a) if unit == "h" else timedelta(minutes=a) for a, unit in parts), timedelta())
    return timedelta(hours=hours)


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int beyond any float is beyond any duration
        return math.inf


def format_duration(value: timedelta) -> str:
    """The shortest form that round-trips: ``6h``, ``90m`` or ``1h30m``; seconds are rounded."""
    minutes = round(value.total_seconds() / 60)
    hours, rest = divmod(minutes, 60)
    if rest == 0:
        return f"{hours}h"
    if hours == 0:
        return f"{rest}m"
    return f"{hours}h{rest}m"
