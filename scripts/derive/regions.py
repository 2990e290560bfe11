"""``data/regions.json``: every public region of the three clouds with its country, EU membership,
Electricity Maps zone, coordinates and availability zones, merged from several region lists."""

from __future__ import annotations

import re
from pathlib import Path

from greenops.catalog.schema import RegionsFile

from .common import PROVIDERS, SCHEMA_VERSION, DataFile, load_json, read_csv, round_

FILE = DataFile("regions.json", RegionsFile)

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

# region-picker labels GCP's North American regions by city or province only.
GCP_NORTH_AMERICA_COUNTRIES = {"Québec": "Canada", "Ontario": "Canada", "Mexico": "Mexico"}


class Countries:
    """ISO 3166 codes by name, and which of them are EU members."""

    def __init__(self, src: Path) -> None:
        self.by_name: dict[str, str] = {}
        self.eu: set[str] = set()
        for row in read_csv(src / "isocountry.csv"):
            code = row["alpha_2"]
            self.by_name[row["name"]] = code
            if row["eu_member"] == "TRUE":
                self.eu.add(code)
        self.by_name.update(COUNTRY_ALIASES)

    def code(self, name: str | None) -> str | None:
        if not name:
            return None
        return self.by_name.get(name.strip())


def derive(src: Path, notes: list[str]) -> dict:
    """The regions document, sorted by provider then name; what was guessed or dropped goes to notes."""
    countries = Countries(src)
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

    def add(
        provider: str,
        name: str,
        display: str,
        country_name: str | None,
        lat: float | None,
        lon: float | None,
        azs: list[str],
    ) -> None:
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
            notes.append(f"{provider}/{name}: country from zone prefix {zone} (source name {country_name!r})")
        if country is None:
            notes.append(f"{provider}/{name}: dropped, no country")
            return
        if lat is None:
            notes.append(f"{provider}/{name}: dropped, no coordinates")
            return
        if zone is None and country not in multi_zone:
            zone, zone_source = country, "country"
            notes.append(f"{provider}/{name}: zone {zone} inferred from its single-zone country")
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
            country_name = GCP_NORTH_AMERICA_COUNTRIES.get(country_name, "United States")
        azs = parse_list(tal.get("Zones"))
        add("gcp", name, label, country_name, to_float(pick.get("latitude")), to_float(pick.get("longitude")), azs)

    aws_tal_by = {r["name"]: r for r in aws_tal}
    for name in sorted(set(aws_coords) | set(aws_tal_by) | {r for p, r in zone_of if p == "aws"}):
        c, tal = aws_coords.get(name, {}), aws_tal_by.get(name, {})
        display = tal.get("displayName") or (f"{c.get('city')}" if c else name)
        add("aws", name, display, c.get("country"), c.get("lat"), c.get("lng"), parse_list(tal.get("zones")))

    fix_coordinates(out, zone_of, notes)
    out.sort(key=lambda r: (PROVIDERS.index(r["provider"]), r["name"]))
    return {"schemaVersion": SCHEMA_VERSION, "regions": out}


def fix_coordinates(regions: list[dict], zone_of: dict, notes: list[str]) -> None:
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
            notes.append(
                f"{r['provider']}/{r['name']}: coordinates ({r['lat']},{r['lon']}) replaced by Electricity Maps "
                f"({lat:.4f},{lon:.4f})"
            )
            r["lat"], r["lon"] = round_(lat, 4), round_(lon, 4)


def strip_geo(display: str | None) -> str | None:
    """Drop the "(Europe) " geography prefix of the tal66 Azure display names."""
    if not display:
        return None
    return re.sub(r"^\([^)]*\)\s*", "", display).strip()


def to_float(v: str | float | None) -> float | None:
    if v is None or v == "":
        return None
    return float(v)


def parse_list(cell: str | None) -> list[str]:
    """The availability zones of a tal66 cell, written as a Python list literal: "['1', '2']"."""
    if not cell:
        return []
    return re.findall(r"'([^']+)'", cell)


def parse_pipe_table(path: Path) -> list[dict[str, str]]:
    """Rows of a file's Markdown table: every line holding a "|", keyed by the first (the separator skipped)."""
    rows = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if "|" in ln]
    header = [h.strip() for h in rows[0].split("|")]
    out = []
    for ln in rows[2:]:
        cells = [c.strip() for c in ln.split("|")]
        out.append(dict(zip(header, cells, strict=False)))
    return out
