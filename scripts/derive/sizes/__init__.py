"""``data/sizes/<provider>.json``: a small, general-purpose subset of each cloud's VM sizes (the
thesis: "a small subset of all the available instance types"; no GPU/HPC), one module per
provider because each publishes sizes and prices in its own format."""

from __future__ import annotations


def size_key(s: dict) -> tuple[int, float, str, str]:
    # Smallest first, so that "the first size that fits" is the cheapest in vCPUs and memory;
    # family then name break ties in a stable order.
    return (s["vcpu"], s["memoryGb"], s["family"], s["name"])
