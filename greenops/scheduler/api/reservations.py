"""``/reservations``: the record of placements, as the scheduler keeps it.

    GET    /reservations?tenant=&zone=&region=&provider=&path=&all=   active ones (all: every phase)
    GET    /reservations/{key}?tenant=
    PATCH  /reservations/{key}?tenant=  {"phase"?: "Provisioning"|"Running"|"Completed"|"Failed",
                                         "reason", "confirm"?: true, "lifecycle"?: {...}}
    DELETE /reservations/{key}?tenant=&reason=                         released; its zone-hours freed
Completed, Failed and Released are terminal and free the zone-hours; a retried release or a late
report changes nothing. A cluster-path booking is a hold (``held_until``) until ``confirm``: its
VmTemplate was seen stored. Reads need the read role and show the tenants the caller reads; PATCH
and DELETE need the report role (the cluster path's controller has it; write implies it) and touch
only reservations whose tenant and path the caller owns (403 otherwise, naming the reservation's
owner and the caller).

A key is its tenant's: the keyed routes act on the caller's own tenant's reservation of it. A caller
of several tenants names whose with ``?tenant=``; without it, the one of its tenants that holds the
key, and a 409 when several do (greenops.reservations.keyed). A reservation of a tenant the caller
may not read is answered 404, byte for byte as an absent key.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from greenops.identity import Principal
from greenops.intensity.series import ceil_second
from greenops.placing.lifecycle import MAX_EVENTS, Event, Lifecycle
from greenops.reservations import (
    PENDING,
    ListingFilter,
    NotPlaced,
    ReservationStore,
    UnknownReservation,
    queue,
    resolve,
)
from greenops.reservations.tables import stored_utc
from greenops.reservations.text import Text
from greenops.scheduler.api.keys import KeyTenant, ReservationKey
from greenops.scheduler.auth import Reader, Reporter
from greenops.scheduler.recorded import bounded, explanation_of, workload_of
from greenops.scheduler.state import ClockDep, StoreDep

MAX_REASON = 1024  # the record's reason column
# A lifecycle's reasons quote what an operator reported; twenty of them fit many times over.
MAX_LIFECYCLE_BYTES = 64 * 1024


class ReservationOut(BaseModel):
    key: str
    tenant: str
    path: str
    phase: str
    reason: str | None
    zone: str
    provider: str | None
    region: str | None
    start: datetime
    end: datetime
    cpu: float = Field(description="vCPUs per job")
    jobs: int
    revision: int
    workload: dict[str, Any] | None = Field(description="the workload as policy saw it, when the caller sent it")
    updated_at: datetime
    held_until: datetime | None = Field(
        default=None, description="a hold, not yet confirmed by its object: released if still one then"
    )
    lifecycle: dict[str, Any] | None = Field(default=None, description="the recorded phases and their real times")
    completion: dict[str, Any] | None = Field(
        default=None, description="what the run reported of its end: exitStatus, reportedAt (the scheduler's clock)"
    )
    priority_class: str | None = Field(default=None, description="its class in the queue")
    priority: int | None = Field(default=None, description="its class's value")
    queued_at: datetime | None = Field(default=None, description="when it joined the queue (a Pending one)")
    position: int | None = Field(
        default=None, description="a Pending one's place in the queue, 1 for the next to be admitted, across tenants"
    )
    created_at: datetime | None = Field(default=None, description="when it was booked (with detail)")
    searched_from: datetime | None = Field(
        default=None,
        description="where the answer's search began: the later "
        "of its clock and the caller's earliest start; "
        "the baseline run starts then (with detail)",
    )
    duration_hours: float | None = Field(default=None, description="one job's run (with detail)")
    answer: dict[str, Any] | None = Field(
        default=None, description="the scheduler's answer as given, with the windows it weighed (with detail)"
    )
    explanation: dict[str, Any] | None = Field(
        default=None, description="policy's account of the eligible set, as the caller sent it (with detail)"
    )


class ReservationList(BaseModel):
    reservations: list[ReservationOut]


class ReportedLifecycle(Lifecycle):
    """A lifecycle as a report sends it: at most the MAX_EVENTS newest transitions a lifecycle keeps
    (Lifecycle.to never keeps more). More is refused (422 naming lifecycle.events), not cut: a
    report of more events than its own lifecycle keeps is not one the record should take in part."""

    events: tuple[Event, ...] = Field(default=(), max_length=MAX_EVENTS)


class PhaseReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phase: Literal["Provisioning", "Running", "Completed", "Failed"] | None = None
    reason: Text = Field(default="", max_length=MAX_REASON)
    confirm: bool = Field(default=False, description="the hold's object was seen stored: it is a reservation now")
    lifecycle: ReportedLifecycle | None = Field(
        default=None,
        description="the phases and the times they really happened "
        f"(at most {MAX_EVENTS} events, {MAX_LIFECYCLE_BYTES} bytes of JSON)",
    )

    @field_validator("lifecycle")
    @classmethod
    def _lifecycle_fits(cls, v: ReportedLifecycle | None) -> ReportedLifecycle | None:
        if v is not None:
            bounded(v.document(), MAX_LIFECYCLE_BYTES, "lifecycle")
        return v

    @model_validator(mode="after")
    def _says_something(self) -> PhaseReport:
        if self.phase is None and not self.confirm and self.lifecycle is None:
            raise ValueError("give a phase, confirm or a lifecycle")
        if self.lifecycle is not None and self.phase is not None and self.lifecycle.phase.value != self.phase:
            raise ValueError(f"the lifecycle's phase {self.lifecycle.phase.value} is not the reported {self.phase}")
        return self


def out(row: dict[str, Any], detail: bool = False, position: int | None = None) -> ReservationOut:
    """The row as the API shows it; ``detail`` adds what was recorded at decision time. A Pending
    one has no placement: its start and end are its search window, and ``position`` its place."""
    first = min(row["placements"], key=lambda p: p["start"], default=None)
    recorded = {}
    if detail:
        booked = stored_utc(row["created_at"])
        began = row["answer"].get("searched_from")  # answers recorded before it was kept have none
        recorded = {
            "created_at": booked,
            "answer": row["answer"],
            "explanation": explanation_of(row["request"].get("explanation")),
            "searched_from": datetime.fromisoformat(began) if began else None,
            "duration_hours": row["request"].get("duration"),
        }
    return ReservationOut(
        key=row["key"],
        tenant=row["tenant"],
        path=row["path"],
        phase=row["phase"],
        reason=row["reason"],
        zone=row["zone"],
        provider=row["provider"],
        region=row["region"],
        start=ceil_second(first["start"]) if first else stored_utc(row["start_at"]),
        end=ceil_second(max(p["end"] for p in row["placements"])) if first else stored_utc(row["end_at"]),
        cpu=row["milli_cpu"] / 1000,
        jobs=row["jobs"],
        revision=row["revision"],
        workload=workload_of(row["request"].get("workload")),
        updated_at=stored_utc(row["updated_at"]),
        held_until=stored_utc(row["held_until"]) if row.get("held_until") else None,
        lifecycle=row.get("lifecycle"),
        completion=row.get("completion"),
        priority_class=row["answer"].get("priority_class") or row["request"].get("priority_class"),
        priority=row.get("priority"),
        queued_at=stored_utc(row["queued_at"]) if row.get("queued_at") else None,
        position=position,
        **recorded,
    )


def _unknown(exc: UnknownReservation) -> JSONResponse:
    return JSONResponse(status_code=404, content={"detail": str(exc)})


def absent(key: str) -> JSONResponse:
    """An absent key's answer; a reservation the caller may not read gets it too, byte for byte."""
    return _unknown(UnknownReservation(f"reservation {key}: no such key"))


def resolved(store: ReservationStore, principal: Principal, key: str, tenant: str | None) -> dict[str, Any] | None:
    """The reservation the caller means by ``key`` (and ``?tenant=``), among the tenants it reads."""
    return resolve(store, key, principal.readable(None), tenant)


router = APIRouter(prefix="/reservations", tags=["reservations"])


class ListingQuery(ListingFilter):
    """``GET /reservations``' query: the record's filter, and how much of each row to show."""

    detail: bool = Field(default=False, description="with what was recorded at decision time")


@router.get("", response_model=ReservationList)
def list_reservations(
    store: StoreDep, clock: ClockDep, query: Annotated[ListingQuery, Query()], principal: Reader
) -> ReservationList:
    now = clock()
    rows = store.list(query, now=now, tenants=principal.readable(query.tenant))
    places = queue.positions(store, now) if any(r["phase"] == PENDING for r in rows) else {}
    return ReservationList(reservations=[out(r, query.detail, places.get((r["tenant"], r["key"]))) for r in rows])


KEYED: dict[int | str, dict[str, Any]] = {
    404: {"description": "no such key among the caller's tenants"},
    409: {"description": "several of the caller's tenants hold the key: name one with ?tenant="},
}


@router.get("/{key:path}", response_model=ReservationOut, responses=KEYED)
def get_reservation(
    key: ReservationKey, store: StoreDep, clock: ClockDep, principal: Reader, tenant: KeyTenant = None
) -> ReservationOut | JSONResponse:
    row = resolved(store, principal, key, tenant)
    # another tenant's row is answered as an absent one: its existence is not the caller's to know
    if row is None or not principal.may_read(row):
        return absent(key)
    place = queue.positions(store, clock()).get((row["tenant"], row["key"])) if row["phase"] == PENDING else None
    return out(row, detail=True, position=place)


@router.patch("/{key:path}", response_model=ReservationOut, responses=KEYED)
def report_phase(
    key: ReservationKey,
    report: PhaseReport,
    store: StoreDep,
    clock: ClockDep,
    principal: Reporter,
    tenant: KeyTenant = None,
) -> ReservationOut | JSONResponse:
    lifecycle = None if report.lifecycle is None else report.lifecycle.document()
    if (found := resolved(store, principal, key, tenant)) is None:
        return absent(key)
    try:
        row = store.report(
            found["tenant"],
            key,
            report.phase,
            report.reason,
            clock(),
            authorize=principal.may_report,
            confirm=report.confirm,
            lifecycle=lifecycle,
        )
        return out(row)
    except UnknownReservation as exc:
        return _unknown(exc)
    except NotPlaced as exc:
        return JSONResponse(status_code=409, content={"detail": str(exc)})


@router.delete("/{key:path}", response_model=ReservationOut, responses=KEYED)
def release(
    key: ReservationKey,
    store: StoreDep,
    clock: ClockDep,
    principal: Reporter,
    reason: Annotated[Text, Query(max_length=MAX_REASON)] = "released by its owner",
    tenant: KeyTenant = None,
) -> ReservationOut | JSONResponse:
    if (found := resolved(store, principal, key, tenant)) is None:
        return absent(key)
    try:
        return out(store.report(found["tenant"], key, "Released", reason, clock(), authorize=principal.may_report))
    except UnknownReservation as exc:
        return _unknown(exc)
