"""``data/sizes/aws.json``: x86 general-purpose, compute and memory sizes (6th/7th generation, no
metal) from Karpenter's instance-type list, with their us-east-1 on-demand price."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from greenops.catalog.schema import SizesFile

from ..common import SCHEMA_VERSION, DataFile, read_csv, round_
from . import size_key

FILE = DataFile("sizes/aws.json", SizesFile)

FAMILIES = ["m6i", "c6i", "r6i", "m7i", "c7i", "r7i", "m6a", "c6a", "r6a"]


def derive(src: Path) -> dict:
    price = {
        row["instance_type"]: float(row["ondemand_usd_per_hour"])
        for row in read_csv(src / "aws_ondemand_prices_karpenter.csv")
    }
    rows = []
    for itype, labels in parse_karpenter(src / "aws_instance_types_karpenter.md"):
        fam = labels.get("karpenter.k8s.aws/instance-family")
        if fam not in FAMILIES or labels.get("kubernetes.io/arch") != "amd64":
            continue
        if labels.get("karpenter.k8s.aws/instance-size", "").startswith("metal"):
            continue
        row = {
            "name": itype,
            "family": fam,
            "vcpu": int(labels["karpenter.k8s.aws/instance-cpu"]),
            "memoryGb": round_(int(labels["karpenter.k8s.aws/instance-memory"]) / 1024, 2),
            "arch": "x86_64",
        }
        if itype in price:
            row["referenceHourlyUsd"] = price[itype]
        rows.append(row)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "provider": "aws",
        "families": FAMILIES,
        "priceNote": "us-east-1 on-demand Linux USD/hour, used as a relative price index in every region.",
        "availabilityNote": "No per-region availability in the sources: a size is assumed offered in every region.",
        "sizes": sorted(rows, key=size_key),
    }


def parse_karpenter(path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(instance type, its labels) for each "### `type`" section of Karpenter's Markdown list."""
    itype, labels, in_labels = None, {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^### `([^`]+)`", line)
        if m:
            if itype:
                yield itype, labels
            itype, labels, in_labels = m.group(1), {}, False
            continue
        # Each type has several "####" tables (labels, resources); only the labels are read.
        if line.startswith("#### "):
            in_labels = line.strip() == "#### Labels"
            continue
        if in_labels and line.strip().startswith("|") and not line.strip().startswith("|--"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 2 and cells[0] != "Label":
                labels[cells[0]] = cells[1]
    if itype:
        yield itype, labels
