"""``data/carbon/profiles.json``: per grid zone, a month x UTC hour-of-day profile of the life-cycle
carbon intensity, or a flat yearly mean where no hourly data exists.

The hourly traces are third-party data: only these summaries are kept, never the raw series.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from greenops.catalog.schema import ProfilesFile

from ..common import SCHEMA_VERSION, DataFile, read_csv, round_

FILE = DataFile("carbon/profiles.json", ProfilesFile)

# Hourly traces kept as month x hour profiles. Values are life-cycle (LCA) intensities.
HOURLY_SOURCES_2023 = "greendcc_ci_2023"
LWA_PROFILE_FILES = {"FR": "letswaitawhile2025_fr_ci.csv"}  # zone -> trace (2025, 30 min)
GCP_ANNUAL_YEARS = range(2025, 2018, -1)  # newest first, so the newest year that has a value wins


def month_hour_profile(ts: pd.Series) -> list[list[float]]:
    df = ts.to_frame("ci")
    grouped = df.groupby([df.index.month, df.index.hour])["ci"].mean()
    return [[round_(grouped.loc[(m, h)]) for h in range(24)] for m in range(1, 13)]


def derive(src: Path, regions: list[dict], notes: list[str]) -> dict:
    profiles: dict[str, dict] = {}
    for path in sorted((src / HOURLY_SOURCES_2023).glob("*_hourly.csv")):
        df = pd.read_csv(path, parse_dates=["Datetime (UTC)"])
        zone = str(df["Zone Id"].iloc[0])
        series = df.set_index("Datetime (UTC)")["Carbon Intensity gCO₂eq/kWh (LCA)"].astype(float)
        profiles[zone] = {
            "kind": "month-hour",
            "source": "Electricity Maps hourly, 2023 (via HPE green-dcc)",
            "period": "2023",
            "estimatedShare": round_(float((df["Data Estimated"].astype(str).str.lower() == "true").mean()), 3),
            "mean": round_(series.mean()),
            "monthHour": month_hour_profile(series),
        }
    for zone, fname in LWA_PROFILE_FILES.items():
        df = pd.read_csv(src / fname, parse_dates=["Time"]).set_index("Time")
        series = df["Carbon Intensity"].astype(float)
        series = series[series.index.year == 2025]
        profiles[zone] = {
            "kind": "month-hour",
            "source": "Let's Wait Awhile method (ENTSO-E mix, IPCC life-cycle factors), 2025",
            "period": "2025",
            "estimatedShare": 0.0,
            "mean": round_(series.mean()),
            "monthHour": month_hour_profile(series),
        }
    # Zones with no hourly data: a flat profile from Google's yearly regional grid intensity, so
    # geographic shifting can still rank them (no temporal signal, by construction).
    gcp_zone = {r["name"]: r["zone"] for r in regions if r["provider"] == "gcp" and r["zone"]}
    for year in GCP_ANNUAL_YEARS:
        path = src / f"gcp_region_carbon_info_{year}.csv"
        if not path.exists():
            continue
        for row in read_csv(path):
            zone = gcp_zone.get(row["Google Cloud Region"])
            # The column's name changes between years; its words do not.
            col = next(k for k in row if "carbon intensity" in k.lower())
            if not zone or zone in profiles or not row[col].strip():
                continue
            profiles[zone] = {
                "kind": "annual-mean",
                "source": f"Google Cloud region carbon info, {year} (grid carbon intensity)",
                "period": str(year),
                "estimatedShare": None,
                "mean": round_(float(row[col])),
                "monthHour": None,
            }
    used = {r["zone"] for r in regions if r["zone"]}
    missing = sorted(used - set(profiles))
    if missing:
        notes.append(f"carbon profiles: no data for {len(missing)} zones used by regions: {missing}")
    return {
        "schemaVersion": SCHEMA_VERSION,
        "unit": "gCO2eq/kWh (life-cycle)",
        "resolution": "month (1-12) x UTC hour-of-day (0-23) means",
        "zones": dict(sorted(profiles.items())),
    }
