"""``/healthz`` and ``/readyz``: the kubelet's probes, open without the bearer token."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from greenops.scheduler.state import SourceDep


class Health(BaseModel):
    status: str
    source: str
    zones: int


router = APIRouter()


@router.get("/healthz", response_model=Health, summary="liveness")
def healthz(source: SourceDep) -> Health:
    return Health(status="ok", source=source.describe(), zones=len(source.zones()))


@router.get("/readyz", response_model=Health, summary="readiness: the carbon source has zones")
def readyz(source: SourceDep) -> Health | JSONResponse:
    zones = source.zones()
    if not zones:
        return JSONResponse(status_code=503, content={"detail": "carbon source has no zones"})
    return Health(status="ready", source=source.describe(), zones=len(zones))
