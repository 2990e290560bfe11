"""``data/latency/gcp.json``: Google's median inter-region round trip (Network Intelligence Center)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from greenops.catalog.schema import LatencyFile

from ..common import SCHEMA_VERSION, DataFile, read_csv, region_names, round_, sort_matrix

FILE = DataFile("latency/gcp.json", LatencyFile)


def derive(src: Path, regions: list[dict]) -> dict:
    known = region_names(regions, "gcp")
    matrix: dict[str, dict[str, float]] = defaultdict(dict)
    for row in read_csv(src / "gcp_inter_region_rtt_median_2023-11-27.csv"):
        s, d = row["src_region"], row["dst_region"]
        if s in known and d in known:
            matrix[s][d] = round_(float(row["median_rtt_ms"]), 1)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "provider": "gcp",
        "unit": "ms",
        "statistic": "median round-trip, 4 h window",
        "source": "Google Cloud Network Intelligence Center performance dashboard, 2023-11-27",
        "filledFromP95": [],
        "matrix": sort_matrix(matrix),
    }
