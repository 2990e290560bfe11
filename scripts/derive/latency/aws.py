"""``data/latency/aws.json``: cloudping.co's one-year P50 round-trip matrix between AWS regions."""

from __future__ import annotations

from pathlib import Path

from greenops.catalog.schema import LatencyFile

from ..common import SCHEMA_VERSION, DataFile, load_json, region_names, round_, sort_matrix

FILE = DataFile("latency/aws.json", LatencyFile)


def derive(src: Path, regions: list[dict]) -> dict:
    known = region_names(regions, "aws")
    raw = load_json(src / "aws_cloudping_p50_1y.json")["data"]
    matrix = {s: {d: round_(v, 1) for d, v in row.items() if d in known} for s, row in raw.items() if s in known}
    return {
        "schemaVersion": SCHEMA_VERSION,
        "provider": "aws",
        "unit": "ms",
        "statistic": "p50 round-trip, 1 year",
        "source": "cloudping.co snapshot 2025-05-29",
        "filledFromP95": [],
        "matrix": sort_matrix(matrix),
    }
