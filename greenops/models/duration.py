"""Workload durations: ``6`` (hours), ``"6h"``, ``"90m"`` or ``"1h30m"``."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+(?:\.\d+)?)([hm])")
_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?[hm])+$")


def parse_duration(value: object) -> timedelta:
    """Parse a duration; a bare number means hours, as in the thesis tuple ``D``."""
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, bool):
        raise ValueError("duration must be a number of hours or a string such as '6h' or '90m'")
    elif isinstance(value, (int, float)):
        result = timedelta(hours=float(value))
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            result = timedelta(hours=float(text))
        elif _WHOLE.fullmatch(text):
            result = timedelta()
            for amount, unit in _PART.findall(text):
                result += timedelta(hours=float(amount)) if unit == "h" else timedelta(minutes=float(amount))
        else:
            raise ValueError(f"malformed duration {value!r}: use hours ('6', '6h') or minutes ('90m'), e.g. '1h30m'")
    else:
        raise ValueError(f"duration must be a number of hours or a string such as '6h', not {type(value).__name__}")
    if result <= timedelta(0):
        raise ValueError(f"duration must be positive, got {value!r}")
    return result


def format_duration(value: timedelta) -> str:
    """The shortest form that round-trips: ``6h``, ``90m`` or ``1h30m``; seconds are rounded."""
    minutes = round(value.total_seconds() / 60)
    hours, rest = divmod(minutes, 60)
    if rest == 0:
        return f"{hours}h"
    if hours == 0:
        return f"{rest}m"
    return f"{hours}h{rest}m"
