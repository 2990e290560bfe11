"""The curated facts, loaded once from ``data/`` and exposed through typed accessors."""

from __future__ import annotations

import json
import math
import os
from functools import cached_property
from pathlib import Path
from typing import Any

from greenops.common.errors import CatalogError

from .schema import (
    SCHEMA_VERSION,
    AwsAmiLookup,
    AzureImage,
    CarbonProfile,
    CrdKind,
    CrdsFile,
    ImagesFile,
    LatencyFile,
    ProfilesFile,
    Region,
    RegionsFile,
    SizesFile,
    VmSize,
)

# the project's data/, through the link beside this module: in a checkout and in an installed wheel
DEFAULT_DATA_DIR = Path(__file__).resolve().parent / "data"


def data_dir() -> Path:
    return Path(os.environ.get("GREENOPS_DATA_DIR", DEFAULT_DATA_DIR))


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            payload: dict[str, Any] = json.load(fh)
    except FileNotFoundError as exc:
        raise CatalogError(f"catalog file {path} is missing: run scripts/derive_data.py") from exc
    except json.JSONDecodeError as exc:
        raise CatalogError(f"catalog file {path} is not valid JSON: {exc}") from exc
    if payload.get("schemaVersion") != SCHEMA_VERSION:
        raise CatalogError(
            f"catalog file {path} has schemaVersion {payload.get('schemaVersion')}, expected {SCHEMA_VERSION}"
        )
    return payload


class Catalog:
    """Regions, latency, VM sizes, images and carbon profiles for every provider."""

    def __init__(self, root: Path):
        self.root = root
        regions = RegionsFile.model_validate(_read(root / "regions.json")).regions
        self.providers: tuple[str, ...] = tuple(dict.fromkeys(r.provider for r in regions))
        self._regions = {(r.provider, r.name): r for r in regions}
        self._by_name: dict[str, list[Region]] = {}
        for r in regions:
            self._by_name.setdefault(r.name, []).append(r)
        self._latency = {p: LatencyFile.model_validate(_read(root / "latency" / f"{p}.json")) for p in self.providers}
        self._sizes = {p: SizesFile.model_validate(_read(root / "sizes" / f"{p}.json")) for p in self.providers}
        self._images = ImagesFile.model_validate(_read(root / "images.json"))
        self._profiles = ProfilesFile.model_validate(_read(root / "carbon" / "profiles.json"))

    # -- regions ----------------------------------------------------------------------------
    def regions(self, provider: str | None = None) -> list[Region]:
        return [r for r in self._regions.values() if provider is None or r.provider == provider]

    def region(self, provider: str, name: str) -> Region:
        try:
            return self._regions[(provider, name)]
        except KeyError:
            raise CatalogError(f"unknown region {name!r} for provider {provider!r}") from None

    def find_regions(self, name: str) -> list[Region]:
        """Every provider's region with this name (names are unique across the three clouds)."""
        return list(self._by_name.get(name, ()))

    def regions_in_zone(self, zone: str, provider: str | None = None) -> list[Region]:
        return [r for r in self.regions(provider) if r.zone == zone]

    def nearest_region(self, provider: str, lat: float, lon: float) -> Region:
        """The provider's region closest on the great circle, for cross-provider latency."""
        candidates = self.regions(provider)
        if not candidates:
            raise CatalogError(f"provider {provider!r} has no regions in the catalog")
        return min(candidates, key=lambda r: (haversine_km(lat, lon, r.lat, r.lon), r.name))

    # -- latency ----------------------------------------------------------------------------
    def latency_ms(self, provider: str, source: str, destination: str) -> float | None:
        """Round-trip latency between two regions of one provider, or None when not measured."""
        return self._latency[provider].matrix.get(source, {}).get(destination)

    def latency_matrix(self, provider: str) -> LatencyFile:
        return self._latency[provider]

    # -- sizes and images -------------------------------------------------------------------
    def sizes(self, provider: str) -> list[VmSize]:
        return list(self._sizes[provider].sizes)

    def size_families(self, provider: str) -> list[str]:
        return list(self._sizes[provider].families)

    def size(self, provider: str, name: str) -> VmSize:
        for s in self._sizes[provider].sizes:
            if s.name == name:
                return s
        raise CatalogError(f"unknown VM size {name!r} for provider {provider!r}")

    @cached_property
    def azure_image(self) -> AzureImage:
        return self._images.azure["imageReference"]

    @cached_property
    def aws_ami_lookup(self) -> AwsAmiLookup:
        return self._images.aws.lookup

    @cached_property
    def image_names(self) -> list[str]:
        """The images a workload may name (``image``), the default first."""
        return [self._images.default, *sorted(self._images.choices)]

    @property
    def default_image(self) -> str:
        return self._images.default

    def image(self, provider: str, region: str, name: str | None = None) -> str:
        """The image ``name`` (default: the catalog's, Ubuntu 22.04) for a region, as the string its
        provider's API takes: an Azure URN, a GCP image path, an AWS AMI id or, for a choice other
        than the default, ``resolve:ssm:<the public parameter of its current AMI>``."""
        self.region(provider, region)
        if name is not None and name != self._images.default:
            choice = self._images.choices.get(name)
            if choice is None:
                raise CatalogError(f"unknown image {name!r}: one of {', '.join(self.image_names)}")
            if provider == "azure":
                return choice.azure.urn
            if provider == "gcp":
                return choice.gcp
            if provider == "aws":
                return f"resolve:ssm:{choice.awsSsmParameter}"
            raise CatalogError(f"no image facts for provider {provider!r}")
        if provider == "azure":
            return self.azure_image.urn
        if provider == "gcp":
            return self._images.gcp["sourceImage"]
        if provider == "aws":
            ami = self._images.aws.amis.get(region)
            if ami is None:
                lookup = self.aws_ami_lookup
                raise CatalogError(
                    f"no AMI is known for aws region {region!r}; resolve one by owner {lookup.owner} "
                    f"and name {lookup.nameFilter!r} (or SSM {lookup.ssmParameter}) and add it to data/images.json"
                )
            return ami
        raise CatalogError(f"no image facts for provider {provider!r}")

    # -- carbon -----------------------------------------------------------------------------
    def profile(self, zone: str) -> CarbonProfile | None:
        return self._profiles.zones.get(zone)

    @property
    def profile_zones(self) -> list[str]:
        return list(self._profiles.zones)

    # -- upstream CRDs ------------------------------------------------------------------------
    @cached_property
    def crd_kinds(self) -> dict[tuple[str, str], CrdKind]:
        """(group, kind) -> the upstream CRD's names, scope and versions."""
        return {(k.group, k.kind): k for k in CrdsFile.model_validate(_read(self.root / "crds.json")).kinds}

    # -- what makes a region placeable ------------------------------------------------------
    def placement_gaps(self, provider: str, region: str) -> list[str]:
        """Reasons a region cannot host a workload (empty when it can)."""
        r = self.region(provider, region)
        gaps = []
        if r.zone is None:
            gaps.append("no Electricity Maps zone")
        elif self.profile(r.zone) is None:
            gaps.append(f"no carbon data for zone {r.zone}")
        if provider == "aws" and region not in self._images.aws.amis:
            gaps.append("no known AMI")
        if provider == "gcp" and not r.availabilityZones:
            gaps.append("no known compute zones")
        return gaps


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(a))
