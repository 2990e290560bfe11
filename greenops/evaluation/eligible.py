"""Where policy lets a workload run, computed in Python from the catalog, for offline evaluation.

The placement policy (``greenops/policies/rego/placement.rego``) is the authority: a workload's
eligible regions are, per provider in its ``eligibleProviders`` that the platform allows, the
regions every constraint keeps: placeable (zone, carbon data, image), EU-only for
``dataResidency: eu``, within ``maxLatency`` of the origin (measured from the provider's region
nearest the origin when the origin belongs to another provider), and with a fitting VM size.
An evaluation of thousands of jobs cannot start an OPA query per job, so this module applies the
same chain to the same facts (the catalog and the policy settings the bundle is built from).
``tests/evaluation/test_geo_constrained.py`` evaluates the real bundle with the pinned ``opa`` on a
sample and requires the same regions, so the two cannot drift apart unnoticed.

Explicit provider/region requests are not modelled: the evaluation's jobs make none.
"""

from __future__ import annotations

from dataclasses import dataclass

from greenops.catalog import Catalog, Region, fits, size_order
from greenops.common.errors import GreenOpsError
from greenops.models.workload import NO_LATENCY_CONSTRAINT_MS, DataResidency, Workload
from greenops.policies.settings import PolicySettings


@dataclass(frozen=True)
class Candidate:
    """An eligible region, its Electricity Maps zone and its latency from the workload's origin
    (None where the provider's matrix has no figure and no bound applies)."""

    provider: str
    region: str
    zone: str
    latency_ms: float | None


def latency_origin(catalog: Catalog, origin_region: str, provider: str) -> str:
    """The region of ``provider`` that latency is measured from: the origin itself when it is one of
    the provider's regions, else the provider's region nearest to it on the great circle."""
    regions = catalog.find_regions(origin_region)
    if not regions:
        raise GreenOpsError(f"unknown origin region {origin_region!r}")
    own = next((r for r in regions if r.provider == provider), None)
    if own is not None:
        return own.name
    return catalog.nearest_region(provider, regions[0].lat, regions[0].lon).name


def _fits_somewhere(catalog: Catalog, region: Region, cpu: int, memory: float) -> bool:
    return any(fits(s, cpu, memory) for s in size_order(catalog, region.provider, region.name))


def eligible_candidates(workload: Workload, catalog: Catalog, settings: PolicySettings) -> list[Candidate]:
    """Every region policy allows for ``workload``, sorted by (latency, provider, region); a region
    whose latency is unknown comes last, as the policy ranks it."""
    if workload.provider is not None or workload.region is not None:
        raise GreenOpsError(
            f"workload {workload.name!r} requests a provider or region: this filter models no explicit requests"
        )
    providers = [p for p in workload.eligible_providers if p in settings.default_providers]
    bounded = workload.max_latency < NO_LATENCY_CONSTRAINT_MS
    out = []
    for provider in providers:
        origin = latency_origin(catalog, workload.origin_region, provider)
        row = catalog.latency_matrix(provider).matrix.get(origin, {})
        for region in catalog.regions(provider):
            if catalog.placement_gaps(provider, region.name) or region.zone is None:
                continue
            if workload.data_residency is DataResidency.EU and not region.eu:
                continue
            ms = 0.0 if region.name == origin else row.get(region.name)
            if bounded and (ms is None or ms > workload.max_latency):
                continue
            if not _fits_somewhere(catalog, region, workload.cpu, workload.memory):
                continue
            out.append(Candidate(provider, region.name, region.zone, ms))
    rank = {p: i for i, p in enumerate(catalog.providers)}
    return sorted(out, key=lambda c: (c.latency_ms is None, c.latency_ms or 0.0, rank[c.provider], c.region))


def eligible_zones(candidates: list[Candidate]) -> tuple[str, ...]:
    """The candidates' zones, sorted: what the policy's decision hands the scheduler."""
    return tuple(sorted({c.zone for c in candidates}))
