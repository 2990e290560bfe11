"""Forecast errors over the first ``hours`` of every forecast: the window a scheduler acts on."""

from __future__ import annotations

import numpy as np

HORIZONS = (24, 48)


def mae(predicted: np.ndarray, actual: np.ndarray, hours: int) -> float:
    return float(np.mean(np.abs(predicted[:, :hours] - actual[:, :hours])))


def mape(predicted: np.ndarray, actual: np.ndarray, hours: int) -> float:
    """Mean absolute percentage error; hours with an actual value below 1 g/kWh are left out, as
    a percentage of (almost) nothing says nothing."""
    p, a = predicted[:, :hours], actual[:, :hours]
    keep = a >= 1.0
    return float(100 * np.mean(np.abs(p[keep] - a[keep]) / a[keep])) if keep.any() else float("nan")


def scores(predicted: np.ndarray, actual: np.ndarray, horizons: tuple[int, ...] = HORIZONS) -> dict[str, float]:
    """``mae_24h``, ``mape_24h``, ``mae_48h``, ... rounded for reports."""
    out = {}
    for h in horizons:
        out[f"mae_{h}h"] = round(mae(predicted, actual, h), 3)
        out[f"mape_{h}h"] = round(mape(predicted, actual, h), 3)
    return out
