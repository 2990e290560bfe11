"""Map a generic (vCPU, RAM) request to a provider VM size.

The rule lives in one place, ``size_order``: a region's sizes in preference order. Python picks
the first that fits, and the OPA bundle ships the same order so Rego picks the same size.
"""

from __future__ import annotations

from greenops.common.errors import NoFittingSize

from .catalog import Catalog
from .schema import VmSize


def size_order(catalog: Catalog, provider: str, region: str) -> list[VmSize]:
    """Sizes offered in ``region``, best first: cheapest where a price is known, then smallest.

    "Smallest" is fewest vCPUs, then least memory, then the family order of
    ``data/sizes/<provider>.json``. Azure has no prices in the catalog, so it is smallest-first.
    """
    catalog.region(provider, region)
    family_rank = {f: i for i, f in enumerate(catalog.size_families(provider))}

    def smallest(s: VmSize) -> tuple[int, float, int, str]:
        return (s.vcpu, s.memoryGb, family_rank.get(s.family, len(family_rank)), s.name)

    offered = [s for s in catalog.sizes(provider) if s.available_in(region)]
    priced = sorted(
        (s for s in offered if s.price_in(region) is not None), key=lambda s: (s.price_in(region), *smallest(s))
    )
    unpriced = sorted((s for s in offered if s.price_in(region) is None), key=smallest)
    return priced + unpriced


def fits(size: VmSize, cpu: int, memory_gb: float) -> bool:
    return size.vcpu >= cpu and size.memoryGb >= memory_gb


def select_size(catalog: Catalog, provider: str, region: str, cpu: int, memory_gb: float) -> VmSize:
    """The first size in ``size_order`` offering at least ``cpu`` vCPUs and ``memory_gb`` GB."""
    for size in size_order(catalog, provider, region):
        if fits(size, cpu, memory_gb):
            return size
    raise NoFittingSize(
        f"no {provider} VM size in {region} offers {cpu} vCPU and {memory_gb:g} GB "
        f"(catalog families: {', '.join(catalog.size_families(provider))})"
    )
