"""``data/sizes/gcp.json``: E2, N2 and N2D standard/highmem/highcpu sizes with their on-demand
price in each region, from the cyclenerd pricing list."""

from __future__ import annotations

import re
from pathlib import Path

from greenops.catalog.schema import SizesFile

from ..common import SCHEMA_VERSION, DataFile, load_yaml, region_names, round_
from . import size_key

FILE = DataFile("sizes/gcp.json", SizesFile)

FAMILY_PATTERN = re.compile(r"^(e2|n2|n2d)-(standard|highmem|highcpu)-\d+$")


def derive(src: Path, regions: list[dict]) -> dict:
    known = region_names(regions, "gcp")
    pricing = load_yaml(src / "gcp_pricing_cyclenerd.yml")
    rows = []
    for name, spec in sorted(pricing["compute"]["instance"].items()):
        if not FAMILY_PATTERN.match(name):
            continue
        # A size without a price in a region is not offered there: the priced regions are its
        # availability.
        prices = {
            r: round_(c["hour"], 5)
            for r, c in sorted(spec.get("cost", {}).items())
            if r in known and isinstance(c, dict) and c.get("hour")
        }
        rows.append(
            {
                "name": name,
                "family": name.split("-")[0],
                "vcpu": int(spec["cpu"]),
                "memoryGb": float(spec["ram"]),
                "arch": "x86_64",
                "hourlyUsd": prices,
                "regions": sorted(prices),
            }
        )
    return {
        "schemaVersion": SCHEMA_VERSION,
        "provider": "gcp",
        "families": ["e2", "n2", "n2d"],
        "priceNote": "On-demand Linux USD/hour per region (pricing.yml, 2026-07). A priced region is an available "
        "region.",
        "sizes": sorted(rows, key=size_key),
    }
