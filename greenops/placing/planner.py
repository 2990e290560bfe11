"""Policy, then scheduler, then the catalog: one workload becomes one Decision."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from greenops.catalog import Catalog, load_catalog
from greenops.common.clock import parse_time, system_clock
from greenops.common.errors import GreenOpsError
from greenops.models import Decision, Workload
from greenops.observability import spans, tracing
from greenops.policies.client import OpaClient, PolicyDenied

from .scheduler_client import Reservation, SchedulerClient, SchedulerRefused


class PlacementError(GreenOpsError):
    """The workload cannot be placed; the message names it and says why."""


class Waiting(Exception):
    """No window has room now, but one could before the deadline: the workload waits in the
    scheduler's queue as Pending (``answer``: its key, position, reason and priority class)."""

    def __init__(self, answer: dict[str, Any]):
        super().__init__(answer.get("reason", ""))
        self.answer = answer

    @property
    def position(self) -> int | None:
        position: int | None = self.answer.get("position")
        return position

    def describe(self) -> str:
        return f"waiting in the scheduler's queue at position {self.position}: {self.answer.get('reason', '')}"


def place(
    workload: Workload,
    opa: OpaClient,
    scheduler: SchedulerClient,
    catalog: Catalog | None = None,
    earliest_start: datetime | None = None,
    key: str | None = None,
    avoid: frozenset[str] = frozenset(),
) -> Decision:
    """Ask OPA for the eligible zones, the scheduler for zone and time (not before
    ``earliest_start``, the caller's clock), OPA again to map the zone back to a provider region
    and size; the image comes from the catalog. With ``key`` the scheduler books it as that
    reservation, counted against the tenant's quota from policy, and it may wait in the scheduler's
    queue (Waiting) when no window has room now. ``avoid`` names provider/regions it must not go to
    (where earlier attempts failed: greenops.placing.failover). Raises PlacementError (or the clients' errors) and
    creates nothing."""
    attributes = {spans.WORKLOAD: workload.name, spans.TENANT: workload.tenant, **({spans.KEY: key} if key else {})}
    with tracing.tracer(__name__).start_as_current_span(spans.PLACE, attributes=attributes) as span:
        decision = _place(workload, opa, scheduler, catalog or load_catalog(), earliest_start, key, avoid)
        span.set_attributes(
            {spans.PROVIDER_NAME: decision.provider, spans.REGION: decision.region, spans.ZONE: decision.zone}
        )
        return decision


def _place(
    workload: Workload,
    opa: OpaClient,
    scheduler: SchedulerClient,
    catalog: Catalog,
    earliest_start: datetime | None,
    key: str | None,
    avoid: frozenset[str] = frozenset(),
) -> Decision:
    spec = workload.spec()
    try:
        decision = opa.require_allowed(spec)
    except PolicyDenied as exc:
        raise PlacementError(f"policy refused it: {exc}") from None
    zone_regions = decision.get("zoneRegions") or {}
    zones = [z for z in decision["zones"] if zone_regions.get(z) not in avoid]
    if not zones:
        raise PlacementError(
            f"every zone policy allows is in a region it failed in before ({', '.join(sorted(avoid))}): "
            "no other region is eligible"
        )
    origin = _origin_zone(catalog, workload.origin_region)
    reservation = (
        None
        if key is None
        else Reservation(
            key=key,
            tenant=workload.tenant,
            path="pulumi",
            quota_vcpu=decision.get("tenantQuotaVcpu"),
            regions=decision.get("zoneRegions") or {},
            # as policy saw it, but without the script: the record keeps what placed it, not what it runs
            workload={k: v for k, v in spec.items() if k != "run"},
            explanation=_with_images(decision, catalog, workload.image),
        )
    )
    answer = scheduler.schedule(
        zones,
        workload.deadline,
        workload.duration_hours,
        workload.cpu,
        workload.memory,
        origin_zone=origin,
        earliest_start=earliest_start,
        reservation=reservation,
        queue=key is not None,  # a keyed booking can wait: its next pass finds it admitted
    )
    if answer.get("phase") == "Pending":
        raise Waiting(answer)
    zone = answer["scheduling_location"]
    selection = opa.decision(spec, zone=zone).get("selection")
    if not selection:
        given_back = ""
        if key is not None:  # booked, but unusable: give it back before failing
            scheduler.release(key, f"zone {zone} maps to no eligible region of {workload.name}", tenant=workload.tenant)
            given_back = f"; its reservation {key} was released"
        raise PlacementError(f"the scheduler chose zone {zone}, which maps to no eligible region{given_back}")
    start = parse_time(answer["scheduling_time"])
    return Decision(
        provider=selection["provider"],
        region=selection["region"],
        zone=zone,
        scheduling_time=start,
        vm_size=selection["vmSize"],
        image=catalog.image(selection["provider"], selection["region"], workload.image),
        expected_intensity=answer.get("expected_intensity"),
        baseline_intensity=answer.get("baseline_intensity"),
        decided_at=_searched_from(answer, earliest_start),
        preemptible=bool(answer.get("preemptible")),
    )


def _searched_from(answer: dict[str, Any], earliest_start: datetime | None) -> datetime:
    """Where the answer's search began (its baseline run starts then): recorded in the answer, so a
    replayed answer keeps the original instant; older schedulers did not record it."""
    if answer.get("searched_from"):
        return datetime.fromisoformat(answer["searched_from"])
    return earliest_start or system_clock()


def _with_images(decision: dict[str, Any], catalog: Catalog, image: str | None) -> dict[str, Any] | None:
    """Policy's explanation with the image each zone's region would boot, so the record holds the
    whole mapping as decided (the image comes from the catalog, not from policy)."""
    explanation = decision.get("explanation")
    if not explanation:
        return explanation
    zones = {
        z: {**m, "image": catalog.image(m["provider"], m["region"], image)}
        for z, m in (explanation.get("zones") or {}).items()
    }
    return {**explanation, "zones": zones}


def _origin_zone(catalog: Catalog, region: str) -> str | None:
    for r in catalog.find_regions(region):
        if r.zone and catalog.profile(r.zone) is not None:
            return r.zone
    return None


# Providers whose operator changes a running VM's size in place: ASO applies a new
# hardwareProfile.vmSize to the same VM (Azure stops, resizes and starts it); Config Connector
# applies a new machineType to the same instance, stopping and starting it, as the instance's
# allow-stopping-for-update annotation lets it (greenops.renderers.providers.gcp). ACK's Instance is
# not resized here: a size change there places the workload again.
IN_PLACE = frozenset({"azure", "gcp"})
# How late the scheduler may start a booking that must start now (its clock and ours differ).
_NOW_SLACK_SECONDS = 300


def resize_in_place(
    workload: Workload,
    opa: OpaClient,
    scheduler: SchedulerClient,
    decision: Decision,
    key: str,
    now: datetime,
    hours: float,
) -> Decision | str:
    """The decision of ``workload`` (its new size) on the same VM: the same provider, region and
    zone, booked under ``key`` for the ``hours`` it still has to run, from now. Why not, when it
    cannot be (policy now refuses it, the zone maps elsewhere for this size, no room there now)."""
    if decision.provider not in IN_PLACE:
        return f"{decision.provider}'s operator does not resize a VM in place here"
    spec = workload.spec()
    try:
        allowed = opa.require_allowed(spec)
    except PolicyDenied as exc:
        raise PlacementError(f"policy refused the new size: {exc}") from None
    if decision.zone not in allowed["zones"]:
        return f"policy no longer allows zone {decision.zone} for the new size"
    selection = opa.decision(spec, zone=decision.zone).get("selection") or {}
    if (selection.get("provider"), selection.get("region")) != (decision.provider, decision.region):
        return f"zone {decision.zone} maps to another provider region for the new size"
    reservation = Reservation(
        key=key,
        tenant=workload.tenant,
        path="pulumi",
        quota_vcpu=allowed.get("tenantQuotaVcpu"),
        regions={decision.zone: f"{decision.provider}/{decision.region}"},
        workload={k: v for k, v in spec.items() if k != "run"},
        explanation=None,
    )
    try:
        answer = scheduler.schedule(
            [decision.zone],
            min(workload.deadline, now + timedelta(hours=hours, seconds=_NOW_SLACK_SECONDS)),
            hours,
            workload.cpu,
            workload.memory,
            earliest_start=now,
            reservation=reservation,
        )
    except SchedulerRefused as exc:
        return f"zone {decision.zone} has no room for it now: {exc}"
    return decision.model_copy(
        update={
            "vm_size": selection["vmSize"],
            "expected_intensity": answer.get("expected_intensity"),
        }
    )
