"""Seasonal forecasts from a trace, with no look-ahead: the future repeats the last period (naive)
or the mean of the last days at the same time of day.

Both give prediction intervals by **split conformal prediction on their own recent residuals**: a
forecast of a time ``k`` periods ahead of its source value misses by ``y(u) - forecast_k(u)``, and
those misses over the ``calibration_days`` before ``now`` (all observed, so nothing looks ahead) are
the calibration set for that lag ``k``, the horizon bucket. The interval is the forecast plus the
``(1 - coverage) / 2`` and ``(1 + coverage) / 2`` quantiles of that set, rounded outwards. A recent
window rather than a fixed held-out year lets the width follow the season: a windy winter month in
GB has wider intervals than a calm summer one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from greenops.intensity.series import Series
from greenops.models.forecast_conformal import conformal_offsets

from .base import Bands, CarbonSource, UnknownZone
from .traces import TraceSource

DAY = 86400.0
CALIBRATION_DAYS = 28
COVERAGE = 0.8
MIN_RESIDUALS = 48  # fewer misses than a day of half hours calibrate nothing


def seasonal_bands(
    full: Series,
    forecast: Series,
    lags: np.ndarray,
    now: float,
    predict: Callable[[np.ndarray, int], np.ndarray],
    coverage: float,
    calibration_days: int,
    method: str,
) -> Bands | None:
    """Conformal bands for ``forecast``, whose points ``lags`` periods ahead of their source values
    come from ``predict(times, lag)``; None when the trace is too short to calibrate a lag."""
    times = forecast.boundaries[:-1]
    ahead = times >= now
    lower, upper = forecast.values.copy(), forecast.values.copy()
    # the calibration set: the trace's own points of the last `calibration_days`, all before now
    first = max(now - calibration_days * DAY, full.start)
    u = full.start + full.step * np.arange(
        np.ceil((first - full.start) / full.step), np.floor((now - full.start) / full.step)
    )
    u = u[u + full.step <= now]
    for lag in np.unique(lags[ahead]).astype(int):
        predicted = predict(u, lag)
        known = np.isfinite(predicted)
        if known.sum() < MIN_RESIDUALS:
            return None
        lo, hi = (float(b) for b in conformal_offsets(full.value_at(u[known]) - predicted[known], coverage))
        sel = ahead & (lags == lag)
        lower[sel] += lo
        upper[sel] += hi
    return Bands(
        Series(forecast.start, forecast.step, np.clip(lower, 0.0, None)),
        Series(forecast.start, forecast.step, upper),
        coverage,
        method,
    )


class SeasonalNaiveSource(CarbonSource):
    """Values at or after ``now`` are the trace's value one (or more) ``period`` earlier, before now.

    ``period`` 1 day is "same hour yesterday", 7 days "same hour last week".
    """

    def __init__(
        self,
        trace: TraceSource,
        period: float = DAY,
        coverage: float = COVERAGE,
        calibration_days: int = CALIBRATION_DAYS,
    ):
        self.trace = trace
        self.period = period
        self.coverage = coverage
        self.calibration_days = calibration_days
        self.name = f"seasonal-naive({period / 3600:g}h)"

    def zones(self) -> frozenset[str]:
        return self.trace.zones()

    def observed(self, zone: str, t0: float, t1: float) -> Series | None:
        return self.trace.observed(zone, t0, t1)

    def _lags(self, zone: str, t0: float, t1: float, now: float) -> tuple[Series, float, np.ndarray]:
        full = self.trace.full(zone)
        step = full.step
        # on the trace's own grid, so every forecast point is one observed point
        start = full.start + np.floor((t0 - full.start) / step) * step
        times = start + step * np.arange(max(1, int(np.ceil((t1 - start) / step))))
        # Shift every future point back by whole periods until it lies before `now`.
        k = np.where(times >= now, np.ceil((times - now + step) / self.period), 0)
        return full, float(start), k

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        full, start, k = self._lags(zone, t0, t1, now)
        times = start + full.step * np.arange(len(k))
        past = times - k * self.period
        if past.min() < full.start:
            raise UnknownZone(f"not enough history for zone {zone} to forecast from")
        return Series(start, full.step, full.value_at(past))

    def bands(self, zone: str, t0: float, t1: float, now: float) -> Bands | None:
        forecast = self.series(zone, t0, t1, now)
        full, _, k = self._lags(zone, t0, t1, now)

        def predict(u: np.ndarray, lag: int) -> np.ndarray:
            source = u - lag * self.period
            return np.where(source >= full.start, full.value_at(source), np.nan)

        method = f"split-conformal on the last {self.calibration_days} days' misses, per lag"
        return seasonal_bands(full, forecast, k, now, predict, self.coverage, self.calibration_days, method)


class SeasonalMeanSource(CarbonSource):
    """The mean of the last ``days`` observed values at the same time of day: a steadier
    seasonal forecast than repeating a single day, still with no look-ahead."""

    def __init__(
        self,
        trace: TraceSource,
        days: int = 7,
        coverage: float = COVERAGE,
        calibration_days: int = CALIBRATION_DAYS,
    ):
        self.trace = trace
        self.days = days
        self.coverage = coverage
        self.calibration_days = calibration_days
        self.name = f"seasonal-mean({days}d)"
        self._naive = SeasonalNaiveSource(trace, DAY)

    def zones(self) -> frozenset[str]:
        return self.trace.zones()

    def observed(self, zone: str, t0: float, t1: float) -> Series | None:
        return self.trace.observed(zone, t0, t1)

    def _mean(self, full: Series, times: np.ndarray, k: np.ndarray) -> np.ndarray:
        """The mean of the ``days`` values ``k``, ``k + 1``, ... days before ``times``; NaN before the trace."""
        back = times - (k + self.days - 1) * DAY
        back_days = k[None, :] + np.arange(self.days)[:, None]  # [days, n]: one value_at for all
        mean = full.value_at(times[None, :] - back_days * DAY).mean(axis=0)
        return np.where(back >= full.start, mean, np.nan)

    def _lags(self, zone: str, t0: float, t1: float, now: float) -> tuple[Series, Series, np.ndarray]:
        first = self._naive.series(zone, t0, t1, now)
        full = self.trace.full(zone)
        times = first.boundaries[:-1]
        return full, first, np.where(times >= now, np.ceil((times - now + full.step) / DAY), 1)

    def series(self, zone: str, t0: float, t1: float, now: float) -> Series:
        full, first, k = self._lags(zone, t0, t1, now)
        times = first.boundaries[:-1]
        mean = self._mean(full, times, k)
        if not np.isfinite(mean).all():
            raise UnknownZone(f"not enough history for zone {zone} to forecast from")
        observed = times < now
        return Series(first.start, first.step, np.where(observed, full.value_at(times), mean))

    def bands(self, zone: str, t0: float, t1: float, now: float) -> Bands | None:
        forecast = self.series(zone, t0, t1, now)
        full, _, k = self._lags(zone, t0, t1, now)
        method = f"split-conformal on the last {self.calibration_days} days' misses, per lag"
        return seasonal_bands(
            full,
            forecast,
            k,
            now,
            lambda u, lag: self._mean(full, u, np.full(len(u), lag)),
            self.coverage,
            self.calibration_days,
            method,
        )
