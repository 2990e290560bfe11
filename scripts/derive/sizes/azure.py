"""``data/sizes/azure.json``: the Dasv4, Easv4 and Fsv2 sizes of Cloud Carbon Footprint's Azure list."""

from __future__ import annotations

from pathlib import Path

from greenops.catalog.schema import SizesFile

from ..common import SCHEMA_VERSION, DataFile, read_csv
from . import size_key

FILE = DataFile("sizes/azure.json", SizesFile)

# (CCF "Series" cell, family name). The order is the preference used to break ties between
# equal sizes.
FAMILIES = [
    ("D2as – D96as v4", "Dasv4"),
    ("E2as – E96as v4", "Easv4"),
    ("Fsv2-series", "Fsv2"),
]


def derive(src: Path) -> dict:
    rows = []
    for row in read_csv(src / "ccf_azure_instances.csv"):
        for series, family in FAMILIES:
            if row["Series"] == series:
                rows.append(
                    {
                        "name": "Standard_" + row["Virtual Machine"].strip().replace(" ", "_"),
                        "family": family,
                        "vcpu": int(row["Instance vCPUs"]),
                        "memoryGb": float(row["Instance Memory"]),
                        "arch": "x86_64",
                    }
                )
    return {
        "schemaVersion": SCHEMA_VERSION,
        "provider": "azure",
        "families": [f for _, f in FAMILIES],
        "priceNote": "No public Azure price list is in the sources: selection falls back to the smallest size.",
        "availabilityNote": "No per-region availability in the sources: a size is assumed offered in every region.",
        "sizes": sorted(first_of_each_name(rows), key=size_key),
    }


def first_of_each_name(rows: list[dict]) -> list[dict]:
    # CCF lists a size once per CPU microarchitecture it runs on (Fsv2: Skylake, Cascade Lake);
    # vCPUs and memory are the same, so the first row is kept.
    seen, out = set(), []
    for r in rows:
        if r["name"] not in seen:
            seen.add(r["name"])
            out.append(r)
    return out
