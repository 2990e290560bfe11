"""``GET /forecast/{zone}``: the carbon source's series for a zone, as the scheduler would weigh it
now (the dashboard draws it against what each placement expected)."""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from greenops.common.instants import UtcInstant
from greenops.intensity.base import SourceUnavailable, UnknownZone
from greenops.intensity.series import ceil_second, to_epoch
from greenops.scheduler.state import ClockDep, SourceDep

MAX_SPAN = timedelta(days=31)  # a month of hourly values is what a page can draw


class ForecastOut(BaseModel):
    zone: str
    source: str
    start: datetime
    step_seconds: float
    values: list[float] = Field(description="gCO2eq/kWh, one per step from start")


router = APIRouter(prefix="/forecast", tags=["forecast"])


@router.get(
    "/{zone}",
    response_model=ForecastOut,
    responses={404: {"description": "unknown zone"}, 422: {"description": "a bad span, named"}},
)
def forecast(
    zone: str, start: UtcInstant, end: UtcInstant, source: SourceDep, clock: ClockDep
) -> ForecastOut | JSONResponse:
    if end <= start or end - start > MAX_SPAN:
        return JSONResponse(
            status_code=422,
            content={"detail": f"end: must be after start and at most {MAX_SPAN.days} days from it"},
        )
    try:
        s = source.series(zone, to_epoch(start), to_epoch(end), to_epoch(clock()))
    except UnknownZone as exc:
        return JSONResponse(status_code=404, content={"detail": f"zone: {exc}"})
    except SourceUnavailable as exc:
        return JSONResponse(status_code=503, headers={"Retry-After": "5"}, content={"detail": str(exc)})
    return ForecastOut(
        zone=zone,
        source=source.describe(),
        start=ceil_second(s.start),
        step_seconds=s.step,
        values=[round(float(v), 2) for v in s.values],
    )
