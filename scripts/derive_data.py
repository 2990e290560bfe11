#!/usr/bin/env python3
"""Derive the curated catalog in ``data/`` from the raw public reference data.

Usage:  python scripts/derive_data.py [--source ../shared/data] [--out data]

The raw files are third-party data under mixed licences, so they are never committed. This script
keeps only facts, in the project's own schema: region metadata, latency matrices, VM size
subsets, image references and month x hour-of-day carbon-intensity *summary profiles* (never the
raw hourly series). It is deterministic: re-running it on the same inputs yields identical files.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import pandas as pd
import yaml

from greenops.catalog.schema import SCHEMA_VERSION  # the version the catalog reads

PROVIDERS = ("azure", "gcp", "aws")

# Sovereign clouds are separate accounts and APIs; a generic workload cannot land there.
EXCLUDED_REGION_PREFIXES = {"azure": ("china",), "gcp": (), "aws": ("cn-",)}

# Country names in the sources that differ from the ISO 3166 short names.
COUNTRY_ALIASES = {
    "United States": "US",
    "USA": "US",
    "UK": "GB",
    "United Kingdom": "GB",
    "England": "GB",
    "South Korea": "KR",
    "UAE": "AE",
    "Kingdom of Saudi Arabia": "SA",
    "Saudi Arabia": "SA",
    "Republic of China": "TW",
    "Taiwan": "TW",
    "People's Republic of China": "CN",
    "Netherlands": "NL",
    "Hong Kong": "HK",
}

# Regions whose country no source states, but whose name does (Reliance Jio regions in India).
REGION_COUNTRY_HINTS = {("azure", "jioindiacentral"): "IN", ("azure", "jioindiawest"): "IN"}

# A small, general-purpose subset (the thesis: "a small subset of all the available instance
# types"; no GPU/HPC). The order is the preference used to break ties between equal sizes.
AZURE_FAMILIES = [
    ("D2as – D96as v4", "Dasv4"),
    ("E2as – E96as v4", "Easv4"),
    ("Fsv2-series", "Fsv2"),
]
GCP_FAMILY_PATTERN = re.compile(r"^(e2|n2|n2d)-(standard|highmem|highcpu)-\d+$")
AWS_FAMILIES = ["m6i", "c6i", "r6i", "m7i", "c7i", "r7i", "m6a", "c6a", "r6a"]

AZURE_IMAGE = {  # thesis §3.4.1, listing 3.6
    "publisher": "Canonical",
    "offer": "0001-com-ubuntu-server-jammy",
    "sku": "22_04-lts",
    "version": "latest",
}
GCP_IMAGE = {"project": "ubuntu-os-cloud", "family": "ubuntu-2204-lts"}
AWS_AMI_LOOKUP = {
    "owner": "099720109477",  # Canonical
    "nameFilter": "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*",
    "ssmParameter": "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
}

# Hourly traces kept as month x hour profiles. Values are life-cycle (LCA) intensities.
HOURLY_SOURCES_2023 = "greendcc_ci_2023"
LWA_PROFILE_FILES = {"FR": "letswaitawhile2025_fr_ci.csv"}  # zone -> trace (2025, 30 min)
GCP_ANNUAL_YEARS = range(2025, 2018, -1)  # newest first


def load_json(path: Path):
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def round_(x: float, nd: int = 1) -> float:
    return float(round(x, nd))


# ---------------------------------------------------------------------------------------------
# Countries and EU membership
# ---------------------------------------------------------------------------------------------
class Countries:
    def __init__(self, src: Path):
        self.by_name: dict[str, str] = {}
        self.eu: set[str] = set()
        self.names: dict[str, str] = {}
        with (src / "isocountry.csv").open(encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                code = row["alpha_2"]
                self.by_name[row["name"]] = code
                self.names[code] = row["name"]
                if row["eu_member"] == "TRUE":
                    self.eu.add(code)
        self.by_name.update(COUNTRY_ALIASES)

    def code(self, name: str | None) -> str | None:
        if not name:
            return None
        return self.by_name.get(name.strip())


# ---------------------------------------------------------------------------------------------
# Regions
# ---------------------------------------------------------------------------------------------
def derive_regions(src: Path, countries: Countries, problems: list[str]) -> list[dict]:
    em = load_json(src / "electricitymaps_data_centers.json")
    zone_of = {(v["provider"], v["region"]): v for v in em.values() if v["provider"] in PROVIDERS}

    az_coords = load_json(src / "azure_region_coordinates.json")
    az_meta = load_json(src / "azure_regions_country_vmisson.json")
    az_tal = parse_pipe_table(src / "regions_azure_tal66.md")
    gcp_picker = load_json(src / "gcp_regions_region_picker.json")
    gcp_tal = parse_pipe_table(src / "regions_gcp_tal66.md")
    aws_coords = {r["code"]: r for r in load_json(src / "aws_regions_coordinates_cloudping.json")}
    aws_tal = parse_pipe_table(src / "regions_aws_tal66.md")

    # Electricity Maps splits some countries into several grid zones (US-*, IN-*, NO-NO1, ...).
    # For any other country the zone key is the ISO code, so a region missing from the
    # data-centre file can still be given its zone when its country is known.
    multi_zone = {v["zoneKey"].split("-")[0] for v in em.values() if "-" in v["zoneKey"]}
    out: list[dict] = []

    def add(provider, name, display, country_name, lat, lon, azs):
        if name.startswith(EXCLUDED_REGION_PREFIXES[provider]):
            return
        em_entry = zone_of.get((provider, name))
        zone = em_entry["zoneKey"] if em_entry else None
        zone_source = "electricitymaps" if em_entry else None
        if (lat is None or lon is None) and em_entry:
            lon, lat = em_entry["lonlat"]
        country = countries.code(country_name) or REGION_COUNTRY_HINTS.get((provider, name))
        if country is None and zone:
            country = zone.split("-")[0]
            problems.append(f"{provider}/{name}: country from zone prefix {zone} (source name {country_name!r})")
        if country is None:
            problems.append(f"{provider}/{name}: dropped, no country")
            return
        if lat is None:
            problems.append(f"{provider}/{name}: dropped, no coordinates")
            return
        if zone is None and country not in multi_zone:
            zone, zone_source = country, "country"
            problems.append(f"{provider}/{name}: zone {zone} inferred from its single-zone country")
        out.append(
            {
                "provider": provider,
                "name": name,
                "displayName": display,
                "country": country,
                "eu": country in countries.eu,
                "zone": zone,
                "zoneSource": zone_source,
                "lat": round_(float(lat), 4),
                "lon": round_(float(lon), 4),
                "availabilityZones": azs,
            }
        )

    # Azure: names from every list we have; country from the vmisson file or the zone prefix.
    tal_by_name = {r["name"]: r for r in az_tal}
    names = sorted(set(az_coords) | set(az_meta) | set(tal_by_name) | {r for p, r in zone_of if p == "azure"})
    for name in names:
        meta, coord, tal = az_meta.get(name, {}), az_coords.get(name, {}), tal_by_name.get(name, {})
        display = meta.get("displayName") or coord.get("displayName") or strip_geo(tal.get("displayName")) or name
        lat = meta.get("lat", coord.get("lat", tal.get("lat")))
        lon = meta.get("lon", coord.get("lon", tal.get("lon")))
        azs = parse_list(tal.get("zones"))
        add("azure", name, display, meta.get("country"), to_float(lat), to_float(lon), azs)

    gcp_tal_by = {r["Region"]: r for r in gcp_tal}
    for name in sorted(set(gcp_picker) | set(gcp_tal_by) | {r for p, r in zone_of if p == "gcp"}):
        pick, tal = gcp_picker.get(name, {}), gcp_tal_by.get(name, {})
        label = pick.get("name") or tal.get("Location") or name
        country_name = label.split(", ")[-1]
        if countries.code(country_name) is None and tal.get("Continent", "").strip() == "North America":
            country_name = {"Québec": "Canada", "Ontario": "Canada", "Mexico": "Mexico"}.get(
                country_name, "United States"
            )
        azs = parse_list(tal.get("Zones"))
        add("gcp", name, label, country_name, to_float(pick.get("latitude")), to_float(pick.get("longitude")), azs)

    aws_tal_by = {r["name"]: r for r in aws_tal}
    for name in sorted(set(aws_coords) | set(aws_tal_by) | {r for p, r in zone_of if p == "aws"}):
        c, tal = aws_coords.get(name, {}), aws_tal_by.get(name, {})
        display = tal.get("displayName") or (f"{c.get('city')}" if c else name)
        add("aws", name, display, c.get("country"), c.get("lat"), c.get("lng"), parse_list(tal.get("zones")))

    fix_gcp_latitudes(out, zone_of, problems)
    return out


def fix_gcp_latitudes(regions: list[dict], zone_of: dict, problems: list[str]) -> None:
    """Prefer Electricity Maps' data-centre coordinates when a region list disagrees by > 5 degrees.

    Seen: GCP africa-south1 has lost its latitude sign in region-picker, and the cloudping list
    puts AWS ca-central-1 in Toronto, while the region is in Montreal.
    """
    for r in regions:
        em = zone_of.get((r["provider"], r["name"]))
        if not em:
            continue
        lon, lat = em["lonlat"]
        if abs(lat - r["lat"]) > 5 or abs(lon - r["lon"]) > 5:
            problems.append(
                f"{r['provider']}/{r['name']}: coordinates ({r['lat']},{r['lon']}) replaced by Electricity Maps "
                f"({lat:.4f},{lon:.4f})"
            )
            r["lat"], r["lon"] = round_(lat, 4), round_(lon, 4)


def strip_geo(display: str | None) -> str | None:
    if not display:
        return None
    return re.sub(r"^\([^)]*\)\s*", "", display).strip()


def to_float(v):
    if v is None or v == "":
        return None
    return float(v)


def parse_list(cell: str | None) -> list[str]:
    if not cell:
        return []
    return re.findall(r"'([^']+)'", cell)


def parse_pipe_table(path: Path) -> list[dict]:
    rows = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if "|" in ln]
    header = [h.strip() for h in rows[0].split("|")]
    out = []
    for ln in rows[2:]:
        cells = [c.strip() for c in ln.split("|")]
        out.append(dict(zip(header, cells, strict=False)))
    return out


# ---------------------------------------------------------------------------------------------
# Latency
# ---------------------------------------------------------------------------------------------
def derive_latency(src: Path, regions: list[dict], problems: list[str]) -> dict[str, dict]:
    known = defaultdict(set)
    for r in regions:
        known[r["provider"]].add(r["name"])
    display_to_name = {}
    for r in regions:
        if r["provider"] == "azure":
            display_to_name[r["displayName"]] = r["name"]
    for name, v in load_json(src / "azure_region_coordinates.json").items():
        display_to_name.setdefault(v["displayName"], name)

    def az_name(display: str) -> str | None:
        display = display.strip()
        if display in display_to_name:
            return display_to_name[display]
        guess = display.lower().replace(" ", "")
        return guess if guess in known["azure"] else None

    matrices: dict[str, dict] = {}
    # Azure: P50 matrix, with pairs missing from it filled from the P95 Europe excerpt.
    az: dict[str, dict[str, float]] = defaultdict(dict)
    unmapped = set()
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
                    az[s][d] = float(cell)
    filled = []
    for src_name, dst_name, ms in parse_azure_p95(src / "azure_network_latency_p95_2026-07_europe_excerpt.md"):
        s, d = az_name(src_name), az_name(dst_name)
        if s is None or d is None:
            unmapped |= {x for x, y in ((src_name, s), (dst_name, d)) if y is None}
            continue
        if d not in az[s]:
            az[s][d] = ms
            filled.append(f"{s}>{d}")
    if unmapped:
        problems.append(f"azure latency: unmapped display names {sorted(unmapped)}")
    matrices["azure"] = {
        "provider": "azure",
        "unit": "ms",
        "statistic": "p50 round-trip",
        "source": "Azure network round-trip latency statistics (P50 matrix, 2026-03)",
        "filledFromP95": sorted(filled),
        "matrix": sort_matrix(az),
    }

    aws_raw = load_json(src / "aws_cloudping_p50_1y.json")["data"]
    aws = {
        s: {d: round_(v, 1) for d, v in row.items() if d in known["aws"]}
        for s, row in aws_raw.items()
        if s in known["aws"]
    }
    matrices["aws"] = {
        "provider": "aws",
        "unit": "ms",
        "statistic": "p50 round-trip, 1 year",
        "source": "cloudping.co snapshot 2025-05-29",
        "filledFromP95": [],
        "matrix": sort_matrix(aws),
    }

    gcp: dict[str, dict[str, float]] = defaultdict(dict)
    with (src / "gcp_inter_region_rtt_median_2023-11-27.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            s, d = row["src_region"], row["dst_region"]
            if s in known["gcp"] and d in known["gcp"]:
                gcp[s][d] = round_(float(row["median_rtt_ms"]), 1)
    matrices["gcp"] = {
        "provider": "gcp",
        "unit": "ms",
        "statistic": "median round-trip, 4 h window",
        "source": "Google Cloud Network Intelligence Center performance dashboard, 2023-11-27",
        "filledFromP95": [],
        "matrix": sort_matrix(gcp),
    }
    return matrices


def parse_azure_p95(path: Path):
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


def sort_matrix(m: dict) -> dict:
    return {s: {d: m[s][d] for d in sorted(m[s])} for s in sorted(m)}


# ---------------------------------------------------------------------------------------------
# VM sizes
# ---------------------------------------------------------------------------------------------
def derive_sizes(src: Path, regions: list[dict]) -> dict[str, dict]:
    sizes: dict[str, dict] = {}

    az_rows = []
    with (src / "ccf_azure_instances.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for series, family in AZURE_FAMILIES:
                if row["Series"] == series:
                    az_rows.append(
                        {
                            "name": "Standard_" + row["Virtual Machine"].strip().replace(" ", "_"),
                            "family": family,
                            "vcpu": int(row["Instance vCPUs"]),
                            "memoryGb": float(row["Instance Memory"]),
                            "arch": "x86_64",
                        }
                    )
    sizes["azure"] = {
        "provider": "azure",
        "families": [f for _, f in AZURE_FAMILIES],
        "priceNote": "No public Azure price list is in the sources: selection falls back to the smallest size.",
        "availabilityNote": "No per-region availability in the sources: a size is assumed offered in every region.",
        "sizes": sorted(dedupe(az_rows), key=size_key),
    }

    gcp_regions = {r["name"] for r in regions if r["provider"] == "gcp"}
    with (src / "gcp_pricing_cyclenerd.yml").open(encoding="utf-8") as fh:
        pricing = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    gcp_rows = []
    for name, spec in sorted(pricing["compute"]["instance"].items()):
        if not GCP_FAMILY_PATTERN.match(name):
            continue
        prices = {
            r: round_(c["hour"], 5)
            for r, c in sorted(spec.get("cost", {}).items())
            if r in gcp_regions and isinstance(c, dict) and c.get("hour")
        }
        gcp_rows.append(
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
    sizes["gcp"] = {
        "provider": "gcp",
        "families": ["e2", "n2", "n2d"],
        "priceNote": "On-demand Linux USD/hour per region (pricing.yml, 2026-07). A priced region is an available "
        "region.",
        "sizes": sorted(gcp_rows, key=size_key),
    }

    aws_price = {}
    with (src / "aws_ondemand_prices_karpenter.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            aws_price[row["instance_type"]] = float(row["ondemand_usd_per_hour"])
    aws_rows = []
    for itype, labels in parse_karpenter(src / "aws_instance_types_karpenter.md"):
        fam = labels.get("karpenter.k8s.aws/instance-family")
        if fam not in AWS_FAMILIES or labels.get("kubernetes.io/arch") != "amd64":
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
        if itype in aws_price:
            row["referenceHourlyUsd"] = aws_price[itype]
        aws_rows.append(row)
    sizes["aws"] = {
        "provider": "aws",
        "families": AWS_FAMILIES,
        "priceNote": "us-east-1 on-demand Linux USD/hour, used as a relative price index in every region.",
        "availabilityNote": "No per-region availability in the sources: a size is assumed offered in every region.",
        "sizes": sorted(aws_rows, key=size_key),
    }
    return sizes


def size_key(s: dict):
    return (s["vcpu"], s["memoryGb"], s["family"], s["name"])


def dedupe(rows: list[dict]) -> list[dict]:
    seen, out = set(), []
    for r in rows:
        if r["name"] not in seen:
            seen.add(r["name"])
            out.append(r)
    return out


def parse_karpenter(path: Path):
    itype, labels, in_labels = None, {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^### `([^`]+)`", line)
        if m:
            if itype:
                yield itype, labels
            itype, labels, in_labels = m.group(1), {}, False
            continue
        if line.startswith("#### "):
            in_labels = line.strip() == "#### Labels"
            continue
        if in_labels and line.strip().startswith("|") and not line.strip().startswith("|--"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 2 and cells[0] != "Label":
                labels[cells[0]] = cells[1]
    if itype:
        yield itype, labels


# ---------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------
def derive_images(src: Path, regions: list[dict]) -> dict:
    aws_regions = {r["name"] for r in regions if r["provider"] == "aws"}
    amis = {}
    with (src / "aws_ubuntu2204_amis_skypilot.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["Tag"] == "skypilot:custom-cpu-ubuntu" and row["Region"] in aws_regions:
                amis[row["Region"]] = row["ImageId"]
    return {
        "schemaVersion": SCHEMA_VERSION,
        "os": "Ubuntu 22.04 LTS",
        "azure": {"imageReference": AZURE_IMAGE},
        "gcp": {
            "sourceImage": f"projects/{GCP_IMAGE['project']}/global/images/family/{GCP_IMAGE['family']}",
            **GCP_IMAGE,
        },
        "aws": {
            "arch": "x86_64",
            "amis": dict(sorted(amis.items())),
            "amiSource": "SkyPilot public Ubuntu 22.04 x86_64 AMIs (built 2024-11-04); regions without one need the "
            "lookup below",
            "lookup": AWS_AMI_LOOKUP,
        },
    }


# ---------------------------------------------------------------------------------------------
# Carbon-intensity profiles
# ---------------------------------------------------------------------------------------------
def month_hour_profile(ts: pd.Series) -> list[list[float]]:
    df = ts.to_frame("ci")
    grouped = df.groupby([df.index.month, df.index.hour])["ci"].mean()
    return [[round_(grouped.loc[(m, h)]) for h in range(24)] for m in range(1, 13)]


def derive_profiles(src: Path, regions: list[dict], problems: list[str]) -> dict:
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
        with path.open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            zone = gcp_zone.get(row["Google Cloud Region"])
            col = next(k for k in row if "carbon intensity" in k.lower())
            if not zone or zone in profiles or not row[col].strip():
                continue
            val = round_(float(row[col]))
            profiles[zone] = {
                "kind": "annual-mean",
                "source": f"Google Cloud region carbon info, {year} (grid carbon intensity)",
                "period": str(year),
                "estimatedShare": None,
                "mean": val,
                "monthHour": None,
            }
    used = {r["zone"] for r in regions if r["zone"]}
    missing = sorted(used - set(profiles))
    if missing:
        problems.append(f"carbon profiles: no data for {len(missing)} zones used by regions: {missing}")
    return {
        "schemaVersion": SCHEMA_VERSION,
        "unit": "gCO2eq/kWh (life-cycle)",
        "resolution": "month (1-12) x UTC hour-of-day (0-23) means",
        "zones": dict(sorted(profiles.items())),
    }


# ---------------------------------------------------------------------------------------------
# Power model (Cloud Carbon Footprint methodology)
# ---------------------------------------------------------------------------------------------
# CCF's published constants, not in the coefficient files: memory power per GB and each cloud's PUE.
CCF_MEMORY_WATTS_PER_GB = 0.392
CCF_PUE = {"aws": 1.135, "gcp": 1.1, "azure": 1.185}


def derive_power(src: Path) -> dict:
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


# ---------------------------------------------------------------------------------------------
# Upstream CRD facts
# ---------------------------------------------------------------------------------------------
def derive_crd_index(crd_dir: Path) -> dict:
    """Group, kind, plural, scope and served versions of every upstream CRD we render or install.

    The render-to-directory Kubernetes provider cannot ask a cluster whether a kind is namespaced;
    these facts let the program tell it (see components/render_mode.py).
    """
    kinds = []
    for path in sorted(crd_dir.glob("*.yaml")):
        with path.open(encoding="utf-8") as fh:
            crd = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        spec = crd["spec"]
        kinds.append(
            {
                "name": crd["metadata"]["name"],
                "group": spec["group"],
                "kind": spec["names"]["kind"],
                "plural": spec["names"]["plural"],
                "singular": spec["names"].get("singular", spec["names"]["kind"].lower()),
                "scope": spec["scope"],
                "served": [v["name"] for v in spec["versions"] if v.get("served")],
                "storage": next(v["name"] for v in spec["versions"] if v.get("storage")),
            }
        )
    return {"schemaVersion": SCHEMA_VERSION, "kinds": kinds}


# ---------------------------------------------------------------------------------------------
def write_json(path: Path, payload) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return len(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent.parent
    parser.add_argument("--source", type=Path, default=here.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=here / "data")
    parser.add_argument("--crds", type=Path, default=here.parent / "shared" / "crds")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"derive_data: source folder {args.source} not found", file=sys.stderr)
        return 2

    problems: list[str] = []
    countries = Countries(args.source)
    regions = derive_regions(args.source, countries, problems)
    regions.sort(key=lambda r: (PROVIDERS.index(r["provider"]), r["name"]))
    latency = derive_latency(args.source, regions, problems)
    sizes = derive_sizes(args.source, regions)
    images = derive_images(args.source, regions)
    profiles = derive_profiles(args.source, regions, problems)

    write_json(args.out / "regions.json", {"schemaVersion": SCHEMA_VERSION, "regions": regions})
    for p in PROVIDERS:
        write_json(args.out / "latency" / f"{p}.json", {"schemaVersion": SCHEMA_VERSION, **latency[p]})
        write_json(args.out / "sizes" / f"{p}.json", {"schemaVersion": SCHEMA_VERSION, **sizes[p]})
    write_json(args.out / "images.json", images)
    write_json(args.out / "carbon" / "profiles.json", profiles)
    write_json(args.out / "power.json", derive_power(args.source))
    if args.crds.is_dir():
        crds = derive_crd_index(args.crds)
        write_json(args.out / "crds.json", crds)
        print(f"  crd kinds={len(crds['kinds'])}")

    print("derived:")
    for p in PROVIDERS:
        rs = [r for r in regions if r["provider"] == p]
        pairs = sum(len(v) for v in latency[p]["matrix"].values())
        print(
            f"  {p:5s} regions={len(rs)} with-zone={sum(1 for r in rs if r['zone'])} eu={sum(r['eu'] for r in rs)} "
            f"latency-pairs={pairs} sizes={len(sizes[p]['sizes'])}"
        )
    print(f"  aws amis={len(images['aws']['amis'])}")
    kinds = defaultdict(int)
    for z in profiles["zones"].values():
        kinds[z["kind"]] += 1
    print(f"  carbon profiles={len(profiles['zones'])} {dict(kinds)}")
    for p in problems:
        print(f"  note: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
