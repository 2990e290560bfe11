"""``/outages``: the provider regions an admin declared unavailable.

    GET    /outages                        the declarations (read role)
    PUT    /outages/{provider}/{region}    declare one, with its reason (admin of every tenant)
    DELETE /outages/{provider}/{region}    lift it (admin of every tenant)

While a region is declared, no booking is made in its zones (the search leaves them out, a
booking there is never replayed), and each Pulumi pass fails the placements there over to another
region within their constraints and deadline (greenops.placing.failover). An outage concerns every
tenant, so an admin scoped to some tenants may read the declarations but not make them.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from greenops.identity import Forbidden
from greenops.identity.principal import Principal
from greenops.reservations.text import Text
from greenops.scheduler.auth import Admin, Reader
from greenops.scheduler.state import ClockDep, StoreDep

ProviderName = Annotated[str, Path(pattern=r"^(azure|gcp|aws)$")]
RegionName = Annotated[str, Path(pattern=r"^[a-z0-9-]{1,64}$")]

router = APIRouter(prefix="/outages", tags=["outages"])


class OutageDeclaration(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # free text but for the NUL byte, which PostgreSQL cannot store (a 422, not a 500)
    reason: Text = Field(min_length=1, max_length=1024, description="what the platform team knows of it")


def described(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "provider": row["provider"],
        "region": row["region"],
        "reason": row["reason"],
        "declaredBy": row["declared_by"],
        "declaredAt": row["declared_at"].isoformat(),
    }


def _platform_admin(admin: Principal) -> None:
    if admin.tenants is not None:
        raise Forbidden(
            f"{admin.describe()} may not declare or lift an outage: an outage moves every tenant's placements, "
            "so it takes an admin of every tenant"
        )


@router.get("")
def listing(store: StoreDep, _reader: Reader) -> dict[str, Any]:
    return {"outages": [described(o) for o in store.outages()]}


@router.put("/{provider}/{region}")
def declare(
    provider: ProviderName, region: RegionName, body: OutageDeclaration, store: StoreDep, clock: ClockDep, admin: Admin
) -> dict[str, Any]:
    _platform_admin(admin)
    return described(store.declare_outage(provider, region, body.reason, admin.name, clock()))


@router.delete("/{provider}/{region}", responses={404: {"description": "no such outage"}})
def lift(provider: ProviderName, region: RegionName, store: StoreDep, admin: Admin) -> Any:
    _platform_admin(admin)
    if not store.lift_outage(provider, region):
        return JSONResponse(status_code=404, content={"detail": f"no outage of {provider}/{region} is declared"})
    return {"provider": provider, "region": region, "lifted": True}
