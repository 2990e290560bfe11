"""Split-conformal bounds: the quantiles of held-out misses that make a central interval.

One definition for every forecaster that carries intervals: the seasonal sources (misses in g/kWh,
one pair) and the models (log misses, a pair per horizon hour)."""

from __future__ import annotations

import numpy as np


def conformal_offsets(residuals: np.ndarray, coverage: float, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper quantiles of ``residuals`` (actual against forecast) for a central interval
    of ``coverage``, along ``axis``, taken outwards (``lower``/``higher``) so that a finite sample
    never narrows it."""
    if not 0 < coverage < 1:
        raise ValueError(f"coverage must be between 0 and 1, got {coverage}")
    lower = np.quantile(residuals, (1 - coverage) / 2, axis=axis, method="lower")
    upper = np.quantile(residuals, (1 + coverage) / 2, axis=axis, method="higher")
    return np.asarray(lower), np.asarray(upper)
