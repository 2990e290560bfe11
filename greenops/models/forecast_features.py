"""The model input, defined once for training, serving and the scheduler's OIP client.

A row is the last ``HISTORY_HOURS`` hourly intensities (oldest first, ending at the forecast start),
then the forecast start's UTC hour (0-23), weekday (0=Monday) and month (1-12).
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

HOUR = 3600.0
HISTORY_HOURS = 168
CALENDAR = ("hour", "weekday", "month")
FEATURES = HISTORY_HOURS + len(CALENDAR)
INPUT_NAME = "features"
# The model's output tensors, read by name by the scheduler's OIP client: the forecast, then the
# prediction interval's bounds (a model without intervals answers the forecast alone)
OUTPUT_NAMES = ("forecast", "lower", "upper")


def feature_row(history: np.ndarray, start: float) -> list[float]:
    """The input row for a forecast starting at ``start`` (epoch seconds, on the hour)."""
    history = np.asarray(history, dtype=float).reshape(-1)
    if history.size != HISTORY_HOURS:
        raise ValueError(f"a forecast needs {HISTORY_HOURS} hours of history, got {history.size}")
    dt = datetime.fromtimestamp(start, tz=UTC)
    return [float(x) for x in history] + [float(dt.hour), float(dt.weekday()), float(dt.month)]


def calendar_columns(starts: np.ndarray) -> np.ndarray:
    """[n, 3] hour, weekday, month of each start (epoch seconds), vectorised."""
    starts = np.asarray(starts, dtype="datetime64[s]")
    hours = starts.astype("datetime64[h]").astype(np.int64)
    days = starts.astype("datetime64[D]").astype(np.int64)
    months = starts.astype("datetime64[M]").astype(np.int64)
    # 1970-01-01 was a Thursday (weekday 3)
    return np.column_stack([hours % 24, (days + 3) % 7, months % 12 + 1]).astype(float)


def windows(
    values: np.ndarray, start: float, horizon: int, stride: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (input row, next ``horizon`` hours) pair of an hourly series starting at ``start``.

    Returns the forecast start times, the rows [n, FEATURES] and the targets [n, horizon].
    """
    values = np.asarray(values, dtype=float)
    first = np.arange(HISTORY_HOURS, values.size - horizon + 1, stride)
    if first.size == 0:
        raise ValueError(
            f"a series of {values.size} h is too short for {HISTORY_HOURS} h of history and a {horizon} h horizon"
        )
    history = np.lib.stride_tricks.sliding_window_view(values, HISTORY_HOURS)[first - HISTORY_HOURS]
    targets = np.lib.stride_tricks.sliding_window_view(values, horizon)[first]
    starts = start + first * HOUR
    rows = np.hstack([history, calendar_columns(starts)])
    return starts, rows, np.array(targets)
