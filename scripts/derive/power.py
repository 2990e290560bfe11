"""``data/power.json``: the Cloud Carbon Footprint power model per provider (watts per vCPU at
idle and full load, watts per GB of memory, PUE), which greenops/insight/report.py turns into energy."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from greenops.catalog.schema import PowerFile

from .common import PROVIDERS, SCHEMA_VERSION, DataFile, round_

FILE = DataFile("power.json", PowerFile)

# CCF's published constants, not in the coefficient files: memory power per GB and each cloud's PUE.
CCF_MEMORY_WATTS_PER_GB = 0.392
CCF_PUE = {"aws": 1.135, "gcp": 1.1, "azure": 1.185}


def derive(src: Path) -> dict:
    """Per provider: the mean min/max watts per vCPU over CPU architectures (CCF's average when the
    microarchitecture is unknown), memory watts per GB and PUE."""
    out = {}
    for provider in PROVIDERS:
        df = pd.read_csv(src / f"ccf_coefficients_{provider}_use.csv")
        out[provider] = {
            "minWattsPerVcpu": round_(float(df["Min Watts"].mean()), 3),
            "maxWattsPerVcpu": round_(float(df["Max Watts"].mean()), 3),
            "memoryWattsPerGb": CCF_MEMORY_WATTS_PER_GB,
            "pue": CCF_PUE[provider],
        }
    return {
        "schemaVersion": SCHEMA_VERSION,
        "source": "Cloud Carbon Footprint coefficients and methodology",
        "utilisation": 0.5,
        "providers": out,
    }
