"""An instant a caller sends: aware, and within Python's calendar once in UTC.

``0001-01-01T00:00:00+14:00`` and ``9999-12-31T23:59:59-12:00`` parse as aware datetimes, but in UTC
they fall before the year 1 or after the year 9999, and every comparison with a UTC time, epoch or
database write of them raised OverflowError: a 500 for what the caller sent. ``UtcInstant`` refuses
them by name at the edge instead. The value is kept as written (its offset too): what a request
stores, and the spec hash its retries are matched by, stay the caller's document.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime


def _within_utc_calendar(value: datetime) -> datetime:
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError("outside the years 1 to 9999 once in UTC") from None
    return value


UtcInstant = Annotated[AwareDatetime, AfterValidator(_within_utc_calendar)]
