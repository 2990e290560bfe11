"""Map a generic (vCPU, RAM) request to a provider VM size."""
from __future__ import annotations

from greenops.errors import NoFittingSize

from .catalog import Catalog
from .schema import VmSize


def select_size(catalog: Catalog, provider: str, region: str, cpu: int, memory_gb: float) -> VmSize:
    """The cheapest size offering at least ``cpu`` vCPUs and ``memory_gb`` GB in ``region``.

    Where the catalog has no price for any fitting size (Azure), the smallest one wins: fewest
    vCPUs, then least memory, then the family order in ``data/sizes/<provider>.json``.
    """
    catalog.region(provider, region)
    family_rank = {f: i for i, f in enumerate(catalog.size_families(provider))}
    fitting = [
        s for s in catalog.sizes(provider)
        if s.vcpu >= cpu and s.memoryGb >= memory_gb and s.available_in(region)
    ]
    if not fitting:
        raise NoFittingSize(
            f"no {provider} VM size in {region} offers {cpu} vCPU and {memory_gb:g} GB "
            f"(catalog families: {', '.join(catalog.size_families(provider))})"
        )

    def smallest(s: VmSize):
        return (s.vcpu, s.memoryGb, family_rank.get(s.family, len(family_rank)), s.name)

    priced = [s for s in fitting if s.price_in(region) is not None]
    if priced:
        return min(priced, key=lambda s: (s.price_in(region), *smallest(s)))
    return min(fitting, key=smallest)
