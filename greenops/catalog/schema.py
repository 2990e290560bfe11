"""Typed schema of the curated files in ``data/``; the derive script writes exactly these shapes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

SCHEMA_VERSION = 1


class _Fact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _File(_Fact):
    """A whole data file: written by ``make data`` for exactly this version of the shapes below."""

    schemaVersion: int

    @field_validator("schemaVersion")
    @classmethod
    def _current(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(f"is {v}, but this code reads version {SCHEMA_VERSION}: run make data")
        return v


class Region(_Fact):
    provider: str
    name: str
    displayName: str
    country: str = Field(min_length=2, max_length=2)
    eu: bool
    zone: str | None
    zoneSource: str | None
    lat: float = Field(ge=-90, le=90)
    lon: float = Field(ge=-180, le=180)
    availabilityZones: list[str]

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.name}"


class RegionsFile(_File):
    regions: list[Region]


class LatencyFile(_File):
    provider: str
    unit: str
    statistic: str
    source: str
    filledFromP95: list[str]
    matrix: dict[str, dict[str, float]]


class VmSize(_Fact):
    name: str
    family: str
    vcpu: int = Field(gt=0)
    memoryGb: float = Field(gt=0)
    arch: str
    hourlyUsd: dict[str, float] = Field(default_factory=dict, description="price per region")
    referenceHourlyUsd: float | None = Field(default=None, description="price in a reference region, used as an index")
    regions: list[str] | None = Field(default=None, description="regions offering it; None = no data, assumed all")

    def available_in(self, region: str) -> bool:
        return self.regions is None or region in self.regions

    def price_in(self, region: str) -> float | None:
        return self.hourlyUsd.get(region, self.referenceHourlyUsd)


class SizesFile(_File):
    provider: str
    families: list[str]
    priceNote: str
    availabilityNote: str | None = None
    sizes: list[VmSize]


class AzureImage(_Fact):
    publisher: str
    offer: str
    sku: str
    version: str

    @property
    def urn(self) -> str:
        return f"{self.publisher}:{self.offer}:{self.sku}:{self.version}"


class AwsAmiLookup(_Fact):
    owner: str
    nameFilter: str
    ssmParameter: str


class AwsImages(_Fact):
    arch: str
    amis: dict[str, str] = Field(description="region -> AMI id, where a published one exists")
    amiSource: str
    lookup: AwsAmiLookup = Field(description="how a region without one finds its AMI")


class ImageChoice(_Fact):
    """A named image other than the default, on every cloud."""

    os: str
    azure: AzureImage
    gcp: str = Field(description="the image (family) path Compute Engine takes")
    awsSsmParameter: str = Field(description="the public SSM parameter holding the region's current AMI")


class ImagesFile(_File):
    os: str
    default: str = Field(description="the name of the default image (os)")
    choices: dict[str, ImageChoice] = Field(description="the other named images a workload may choose")
    azure: dict[str, AzureImage]
    gcp: dict[str, str]
    aws: AwsImages


class CarbonProfile(_Fact):
    kind: str = Field(pattern="^(month-hour|annual-mean)$")
    source: str
    period: str
    estimatedShare: float | None
    mean: float = Field(ge=0)
    monthHour: list[list[float]] | None = Field(default=None, description="12 x 24 UTC means")

    def intensity_at(self, month: int, hour: int) -> float:
        """Profile value for a calendar month (1-12) and UTC hour (0-23)."""
        if self.monthHour is None:
            return self.mean
        return self.monthHour[month - 1][hour]


class ProfilesFile(_File):
    unit: str
    resolution: str
    zones: dict[str, CarbonProfile]


class CrdKind(_Fact):
    name: str
    group: str
    kind: str
    plural: str
    singular: str
    scope: str = Field(pattern="^(Namespaced|Cluster)$")
    served: list[str]
    storage: str


class CrdsFile(_File):
    kinds: list[CrdKind]


class ProviderPower(_Fact):
    """Cloud Carbon Footprint's power model for one provider."""

    minWattsPerVcpu: float = Field(gt=0)
    maxWattsPerVcpu: float = Field(gt=0)
    memoryWattsPerGb: float = Field(gt=0)
    pue: float = Field(ge=1)


class PowerFile(_File):
    source: str
    utilisation: float = Field(ge=0, le=1, description="the CPU load assumed for every run")
    providers: dict[str, ProviderPower]
