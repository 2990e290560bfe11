#!/usr/bin/env python3
"""Derive the curated catalog in ``data/`` from the raw public reference data.

Usage:  python scripts/derive_data.py [--source ../shared/data] [--crds ../shared/crds] [--out data]

The raw files are third-party data under mixed licences, so they are never committed. This script
keeps only facts, in the project's own schema: region metadata, latency matrices, VM size
subsets, image references and month x hour-of-day carbon-intensity *summary profiles* (never the
raw hourly series). It is deterministic: re-running it on the same inputs yields identical files.

Each file has its own module in ``scripts/derive/``. Every document is validated against its model
in greenops.catalog.schema before any is written: an invalid one stops the run with a one-line
error (file, field, reason) and leaves ``data/`` as it was.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from derive import crds, images, power, regions
from derive.carbon import profiles
from derive.common import PROVIDERS, DataFile, DataFileError, write_catalog
from derive.latency import aws as aws_latency
from derive.latency import azure as azure_latency
from derive.latency import gcp as gcp_latency
from derive.sizes import aws as aws_sizes
from derive.sizes import azure as azure_sizes
from derive.sizes import gcp as gcp_sizes

REPO = Path(__file__).resolve().parent.parent


def derive_all(source: Path, crd_dir: Path, notes: list[str]) -> dict[DataFile, dict]:
    """Every document, in the order of data/'s files; regions first, as the others keep only its regions."""
    regions_doc = regions.derive(source, notes)
    rs = regions_doc["regions"]
    docs = {
        regions.FILE: regions_doc,
        azure_latency.FILE: azure_latency.derive(source, rs, notes),
        gcp_latency.FILE: gcp_latency.derive(source, rs),
        aws_latency.FILE: aws_latency.derive(source, rs),
        azure_sizes.FILE: azure_sizes.derive(source),
        gcp_sizes.FILE: gcp_sizes.derive(source, rs),
        aws_sizes.FILE: aws_sizes.derive(source),
        images.FILE: images.derive(source, rs),
        profiles.FILE: profiles.derive(source, rs, notes),
        power.FILE: power.derive(source),
    }
    # The CRDs are optional input: without them crds.json is left as it is.
    if crd_dir.is_dir():
        docs[crds.FILE] = crds.derive(crd_dir)
    else:
        notes.append(f"no CRD folder at {crd_dir}: crds.json not re-derived")
    return docs


def summary(docs: dict[DataFile, dict]) -> list[str]:
    rs = docs[regions.FILE]["regions"]
    latency = {"azure": azure_latency, "gcp": gcp_latency, "aws": aws_latency}
    sizes = {"azure": azure_sizes, "gcp": gcp_sizes, "aws": aws_sizes}
    lines = []
    for p in PROVIDERS:
        mine = [r for r in rs if r["provider"] == p]
        pairs = sum(len(v) for v in docs[latency[p].FILE]["matrix"].values())
        lines.append(
            f"{p:5s} regions={len(mine)} with-zone={sum(1 for r in mine if r['zone'])} "
            f"eu={sum(r['eu'] for r in mine)} latency-pairs={pairs} sizes={len(docs[sizes[p].FILE]['sizes'])}"
        )
    lines.append(f"aws amis={len(docs[images.FILE]['aws']['amis'])}")
    zones = docs[profiles.FILE]["zones"]
    lines.append(f"carbon profiles={len(zones)} {dict(Counter(z['kind'] for z in zones.values()))}")
    if crds.FILE in docs:
        lines.append(f"crd kinds={len(docs[crds.FILE]['kinds'])}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=REPO / "data")
    parser.add_argument("--crds", type=Path, default=REPO.parent / "shared" / "crds")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"derive_data: source folder {args.source} not found", file=sys.stderr)
        return 2

    notes: list[str] = []
    docs = derive_all(args.source, args.crds, notes)
    try:
        write_catalog(args.out, docs)
    except DataFileError as exc:
        print(f"derive_data: invalid {exc}; nothing written", file=sys.stderr)
        return 1

    print("derived:")
    for line in summary(docs):
        print(f"  {line}")
    for note in notes:
        print(f"  note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
