"""The tenant's rules, checked on every booking (the policy bundle checks them too:
policies/rego/tenant_rules.rego). A caller's request comes from OPA on both paths, so a refusal here
means a request that policy did not make: a client of the scheduler's own API, or a tampered body.

Rules on providers, regions or residency need each eligible zone mapped to the provider/region it
stands for (``regions``): a request without that mapping cannot show that it keeps to them, and is
refused. Each refusal is a 403 naming the field, the tenant's rule and the value that breaks it.
"""

from __future__ import annotations

from greenops.catalog import load_catalog
from greenops.common.errors import CatalogError
from greenops.identity import Forbidden
from greenops.policies.settings import TenantRules
from greenops.scheduler.contract import SchedulingRequest


def check(rules: TenantRules, tenant: str, req: SchedulingRequest) -> None:
    """Raises Forbidden when ``req`` asks for more than tenant ``tenant``'s rules allow."""
    rule = f"tenant {tenant}'s rule"
    if rules.max_cpu is not None and req.cpu > rules.max_cpu:
        raise Forbidden(f"cpu: {rule} max_cpu {rules.max_cpu:g}: the request asks for {req.cpu:g} vCPU per job")
    if rules.max_memory_gb is not None and req.memory > rules.max_memory_gb:
        raise Forbidden(
            f"memory: {rule} max_memory_gb {rules.max_memory_gb:g}: the request asks for {req.memory:g} GB per job"
        )
    if rules.providers is None and rules.regions is None and rules.residency is None:
        return
    unmapped = [z for z in req.eligible_regions if z not in req.regions]
    if unmapped:
        raise Forbidden(
            f"regions: tenant {tenant} has rules on providers, regions or residency, and zone(s) "
            f"{', '.join(unmapped)} are not mapped to a provider/region"
        )
    for zone in req.eligible_regions:
        provider, region = req.regions[zone].split("/", 1)
        if rules.providers is not None and provider not in rules.providers:
            raise Forbidden(
                f"regions: {rule} providers {sorted(rules.providers)} does not allow {provider} (zone {zone})"
            )
        if rules.regions is not None and req.regions[zone] not in rules.regions:
            raise Forbidden(
                f"regions: {rule} regions {sorted(rules.regions)} does not allow {req.regions[zone]} (zone {zone})"
            )
        if rules.residency == "eu" and not _in_the_eu(provider, region):
            raise Forbidden(f"regions: {rule} residency eu: {req.regions[zone]} (zone {zone}) is not in the EU")


def _in_the_eu(provider: str, region: str) -> bool:
    try:
        return load_catalog().region(provider, region).eu
    except CatalogError:  # a region the catalog does not know is not known to be in the EU
        return False
