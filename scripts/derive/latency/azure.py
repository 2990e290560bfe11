"""``data/latency/azure.json``: Azure's P50 round-trip matrix, its gaps filled from the P95 Europe
excerpt. Both sources name regions by display name, so names are mapped back to region names."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from greenops.catalog.schema import LatencyFile

from ..common import SCHEMA_VERSION, DataFile, load_json, region_names, sort_matrix

FILE = DataFile("latency/azure.json", LatencyFile)


def derive(src: Path, regions: list[dict], notes: list[str]) -> dict:
    known = region_names(regions, "azure")
    display_to_name = {r["displayName"]: r["name"] for r in regions if r["provider"] == "azure"}
    # The coordinates file knows the display names of regions the region list dropped or renamed.
    for name, v in load_json(src / "azure_region_coordinates.json").items():
        display_to_name.setdefault(v["displayName"], name)

    def az_name(display: str) -> str | None:
        display = display.strip()
        if display in display_to_name:
            return display_to_name[display]
        guess = display.lower().replace(" ", "")
        return guess if guess in known else None

    matrix: dict[str, dict[str, float]] = defaultdict(dict)
    unmapped: set[str] = set()
    with (src / "azure_region_latency_p50_matrix.csv").open(encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        dsts = [az_name(h) for h in header[1:]]
        unmapped |= {h for h, d in zip(header[1:], dsts, strict=True) if d is None}
        for row in reader:
            s = az_name(row[0])
            if s is None:
                unmapped.add(row[0])
                continue
            for d, cell in zip(dsts, row[1:], strict=False):
                if d is not None and cell.strip():
                    matrix[s][d] = float(cell)
    # A P95 is an upper bound of the P50: it only fills pairs the P50 matrix lacks, and each
    # filled pair is listed so a reader knows which values are pessimistic.
    filled = []
    for src_name, dst_name, ms in parse_p95(src / "azure_network_latency_p95_2026-07_europe_excerpt.md"):
        s, d = az_name(src_name), az_name(dst_name)
        if s is None or d is None:
            unmapped |= {x for x, y in ((src_name, s), (dst_name, d)) if y is None}
            continue
        if d not in matrix[s]:
            matrix[s][d] = ms
            filled.append(f"{s}>{d}")
    if unmapped:
        notes.append(f"azure latency: unmapped display names {sorted(unmapped)}")
    return {
        "schemaVersion": SCHEMA_VERSION,
        "provider": "azure",
        "unit": "ms",
        "statistic": "p50 round-trip",
        "source": "Azure network round-trip latency statistics (P50 matrix, 2026-03)",
        "filledFromP95": sorted(filled),
        "matrix": sort_matrix(matrix),
    }


def parse_p95(path: Path) -> Iterator[tuple[str, str, float]]:
    """(source, destination, ms) of every numeric cell of the excerpt's Markdown tables.

    The excerpt splits the matrix into one table per destination tab, each with its own "Source"
    header row; a line of text (the next tab's heading) ends a table, blank lines do not.
    """
    header = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None if not line.strip() == "" else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "Source":
            header = cells[1:]
            continue
        if header is None or set(cells[0]) <= {"-"}:
            continue
        for dst, cell in zip(header, cells[1:], strict=False):
            if cell and cell.replace(".", "").isdigit():
                yield cells[0], dst, float(cell)
