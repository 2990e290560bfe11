"""``components/versions.yaml`` as typed pins: every upstream version the platform installs.

The file is read and validated once per process (``pinned_versions``); a stack's overrides
(``greenops:platform.versions.<entry>``) are laid over its entries and validated the same way, by
``components.platform_config.PlatformConfig``. Every entry has one of four shapes:

- ``ChartPin``: a Helm chart, ``{repo, chart, version, values?}`` (installed by components/helm.py);
- ``OperatorBundlePin``: one manifest inside an upstream release archive, ``{operator_bundle, sha256,
  operator_manifest, version}``, for an operator that publishes no chart (components/operator_bundle.py);
- ``ImagePin``: a container image, ``"registry/repository:tag"`` (or ``@sha256:...``), a plain string;
- ``WorkspacePin``: what the reconciler's workspace pod runs the workloads program with, ``{image, python}``.

A new entry is a line in the file and a field of ``PinnedVersions``: a caller then reads
``pins.<entry>.version`` with its type known, and an entry or field misspelt in the file or in a
stack is refused by name instead of being ignored.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import pulumi
import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from greenops.common.errors import field_errors

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.yaml"
_PROJECT = VERSIONS_FILE.parents[1]
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class VersionsFileError(pulumi.RunError):
    """versions.yaml is not valid: the message names the file, every bad entry and field, and why.
    A RunError, so a Pulumi program stops with the message alone."""


def _text(value: Any) -> Any:
    # YAML reads an unquoted 1.10 as the number 1.1: a version written as a number is not what was meant
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f'{value!r} is a number, not text (YAML reads 1.10 as 1.1): quote the version, "{value}"')
    return value


Version = Annotated[str, BeforeValidator(_text), Field(min_length=1)]


def _image_text(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f'expected an image pin "registry/repository:tag", got {type(value).__name__} {value!r}')
    return value


def _pinned_image(reference: str) -> str:
    # without a tag or a digest an image is whatever the registry serves that day: not a pin
    name = reference.rsplit("/", 1)[-1]
    if any(c.isspace() for c in reference) or not (":" in name or "@sha256:" in reference):
        raise ValueError(f"{reference!r} names no tag or digest (registry/repository:tag or ...@sha256:<digest>)")
    return reference


ImagePin = Annotated[str, BeforeValidator(_image_text), AfterValidator(_pinned_image)]


def _sha256(value: str) -> str:
    if not SHA256.fullmatch(value):
        raise ValueError(f"{value!r} is not a sha256: 64 lowercase hex digits")
    return value


def _url(*schemes: str) -> AfterValidator:
    def check(value: str) -> str:
        if not value.startswith(schemes):
            raise ValueError(f"{value!r} is not a URL starting with {' or '.join(schemes)}")
        return value

    return AfterValidator(check)


class _Pin(BaseModel):
    """One entry of versions.yaml. Unknown fields are refused: a misspelt one would otherwise be
    ignored, and the default it meant to replace installed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    SHAPE: ClassVar[str]  # how the entry is written, for the error when it is written otherwise

    @model_validator(mode="before")
    @classmethod
    def _written_as_a_mapping(cls, data: Any) -> Any:
        # pydantic's own message ("a valid dictionary or instance of ChartPin") names no fields
        if not isinstance(data, Mapping | BaseModel):
            raise ValueError(f"expected {cls.SHAPE}, got {type(data).__name__} {data!r}")
        return data


class ChartPin(_Pin):
    SHAPE: ClassVar[str] = "a chart pin {repo, chart, version, values?}"

    repo: Annotated[str, _url("https://", "http://", "oci://")]
    chart: str = Field(min_length=1)
    version: Version
    # Overrides that belong to the pinned version itself, whoever installs it (e.g. an image moved
    # to another repository); components/helm.py merges the component's own values over them.
    values: dict[str, Any] = Field(default_factory=dict)

    @property
    def oci(self) -> bool:
        """An OCI registry, which Helm addresses as one URL, not a repository plus a chart name."""
        return self.repo.startswith("oci://")


class OperatorBundle(_Pin):
    """Where an operator's manifest comes from: what components/operator_bundle.py needs."""

    SHAPE: ClassVar[str] = "an operator bundle {operator_bundle, sha256, operator_manifest}"

    operator_bundle: Annotated[str, _url("https://", "http://")]  # a versioned archive, never latest/
    sha256: Annotated[str, AfterValidator(_sha256)]  # the archive is refused unless it matches
    operator_manifest: str = Field(min_length=1)  # the one member applied, a path inside the archive


class OperatorBundlePin(OperatorBundle):
    SHAPE: ClassVar[str] = "an operator bundle pin {operator_bundle, sha256, operator_manifest, version}"

    version: Version  # the release the archive is; a bump changes it, the URL and the sha256 together


class WorkspacePin(_Pin):
    SHAPE: ClassVar[str] = "a workspace pin {image, python}"

    image: ImagePin
    # the Python the image's pyenv runs the program with: its default may be outside requires-python
    python: Version


class PinnedVersions(BaseModel):
    """Every entry of versions.yaml, each a field of its shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    krateo_core_provider: ChartPin
    azure_service_operator: ChartPin
    cert_manager: ChartPin
    config_connector: OperatorBundlePin
    ack_ec2: ChartPin
    opa_image: ImagePin
    kube_mgmt_image: ImagePin
    bundle_init_image: ImagePin
    mlflow: ChartPin
    postgresql: ChartPin
    seaweedfs: ChartPin
    kserve_crd: ChartPin
    kserve: ChartPin
    mlserver_image: ImagePin
    greenops_image: ImagePin
    pulumi_kubernetes_operator: ChartPin
    pulumi_workspace: WorkspacePin

    def overridden(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The entries, as plain data, with a stack's overrides laid over them, ready to validate.
        A mapping over a pinned mapping replaces only the fields it names (``values`` as a whole);
        anything else replaces the entry."""
        entries = self.model_dump()
        for key, value in overrides.items():
            pinned = entries.get(key)
            entries[key] = {**pinned, **value} if isinstance(pinned, dict) and isinstance(value, Mapping) else value
        return entries


def problems(exc: ValidationError) -> list[str]:
    """``entry.field: reason`` for each error of validating PinnedVersions."""
    return [f"{field}: {reason}" for field, reason in field_errors(exc.errors(), _unknown_field)]


def _unknown_field(error: ErrorDetails) -> str | None:
    """What an unknown entry or field is, in the file's terms (None: pydantic's message will do)."""
    loc = error["loc"]
    if error["type"] != "extra_forbidden":
        return None
    if len(loc) == 1:
        return "not an entry the platform reads (each entry is a field of components.pins.PinnedVersions)"
    shape = getattr(PinnedVersions.model_fields[str(loc[0])].annotation, "SHAPE", "this entry")
    return f"unknown field: {shape} has no {loc[-1]!r}"


def _shown(path: Path) -> str:
    # the project's own file by its project path; any other (a test's) as given
    try:
        return str(path.resolve().relative_to(_PROJECT))
    except ValueError:
        return str(path)


def read_versions(path: Path = VERSIONS_FILE) -> PinnedVersions:
    """A versions file, validated; every problem in it reported at once, in one VersionsFileError."""
    shown = _shown(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise VersionsFileError(f"{shown}: cannot be read: {exc}") from None
    if not isinstance(raw, dict):
        raise VersionsFileError(f"{shown}: expected a mapping of entries, got {type(raw).__name__}")
    try:
        return PinnedVersions.model_validate(raw)
    except ValidationError as exc:
        raise VersionsFileError(f"{shown}: {'; '.join(problems(exc))}") from None


@functools.cache
def pinned_versions() -> PinnedVersions:
    """components/versions.yaml, read and validated once per process."""
    return read_versions(VERSIONS_FILE)
