"""components/versions.yaml as typed pins: the real file loads, every entry in its shape, and a bad
entry (in the file or in a stack's override) is refused naming the entry, the field and the reason."""

from __future__ import annotations

import re
from pathlib import Path

import pulumi
import pytest
import yaml
from pydantic import ValidationError

from components import pins
from components.pins import (
    ChartPin,
    OperatorBundlePin,
    PinnedVersions,
    VersionsFileError,
    WorkspacePin,
    pinned_versions,
    read_versions,
)
from components.platform_config import VERSIONS_FILE, PlatformConfig
from greenops.common.errors import field_errors
from tests.components.test_platform_mocks import PROD, run_platform

RAW = yaml.safe_load(VERSIONS_FILE.read_text())


def written(tmp_path: Path, entries: dict | list | str) -> Path:
    path = tmp_path / "versions.yaml"
    path.write_text(yaml.safe_dump(entries) if not isinstance(entries, str) else entries)
    return path


def refusal(tmp_path: Path, **changes) -> str:
    """The error for the real file with ``changes`` made to it (an entry set to None is removed)."""
    entries = {**RAW, **changes}
    with pytest.raises(VersionsFileError) as caught:
        read_versions(written(tmp_path, {k: v for k, v in entries.items() if v is not None}))
    return str(caught.value)


def test_the_real_file_loads_every_entry_in_its_shape():
    loaded = read_versions()
    assert set(RAW) == set(PinnedVersions.model_fields)  # every entry is read, none is missing
    assert loaded.cert_manager == ChartPin(
        repo="oci://quay.io/jetstack/charts", chart="cert-manager", version="v1.21.1"
    )
    assert loaded.cert_manager.oci and not loaded.mlflow.oci
    assert loaded.postgresql.values["image"]["repository"] == "bitnamilegacy/postgresql"
    assert isinstance(loaded.config_connector, OperatorBundlePin)
    assert loaded.config_connector.sha256 == RAW["config_connector"]["sha256"]
    assert loaded.opa_image == RAW["opa_image"]
    assert loaded.pulumi_workspace == WorkspacePin(**RAW["pulumi_workspace"])
    assert pinned_versions() == loaded and pinned_versions() is pinned_versions()  # read once per process


def test_the_project_file_is_named_by_its_project_path():
    assert pins._shown(VERSIONS_FILE) == "components/versions.yaml"


@pytest.mark.parametrize(
    "changes, message",
    [
        # a missing field
        (
            {"cert_manager": {"repo": "oci://quay.io/jetstack/charts", "chart": "cert-manager"}},
            r"cert_manager\.version: Field required",
        ),
        # wrong types
        (
            {"ack_ec2": {**RAW["ack_ec2"], "version": 1.2}},
            r'ack_ec2\.version: 1\.2 is a number, not text \(YAML reads 1\.10 as 1\.1\): quote the version, "1\.2"',
        ),
        (
            {"postgresql": {**RAW["postgresql"], "values": ["image"]}},
            r"postgresql\.values: Input should be a valid dictionary",
        ),
        (
            {"pulumi_workspace": {"image": "docker.io/pulumi/pulumi:3.259.0-nonroot", "python": 3.12}},
            r"pulumi_workspace\.python: 3\.12 is a number",
        ),
        # an entry not in its entry's shape
        (
            {"cert_manager": "v1.21.1"},
            r"cert_manager: expected a chart pin \{repo, chart, version, values\?\}, got str 'v1\.21\.1'",
        ),
        (
            {"opa_image": {"image": "opa", "tag": "1.22.0"}},
            r'opa_image: expected an image pin "registry/repository:tag", got dict',
        ),
        (
            {"pulumi_workspace": "docker.io/pulumi/pulumi:3.259.0"},
            r"pulumi_workspace: expected a workspace pin \{image, python\}",
        ),
        # fields and entries the platform does not read, and values that are no pin
        (
            {"mlflow": {**RAW["mlflow"], "chrt": "mlflow"}},
            r"mlflow\.chrt: unknown field: a chart pin \{repo, chart, version, values\?\} has no 'chrt'",
        ),
        (
            {"grafana": {"repo": "https://grafana.github.io/helm-charts", "chart": "grafana", "version": "9.0.0"}},
            r"grafana: not an entry the platform reads",
        ),
        (
            {"kube_mgmt_image": "docker.io/openpolicyagent/kube-mgmt"},
            r"kube_mgmt_image: 'docker\.io/openpolicyagent/kube-mgmt' names no tag or digest",
        ),
        (
            {"seaweedfs": {**RAW["seaweedfs"], "repo": "seaweedfs.github.io/seaweedfs/helm"}},
            r"seaweedfs\.repo: 'seaweedfs\.github\.io/seaweedfs/helm' is not a URL starting with https://",
        ),
        (
            {"config_connector": {**RAW["config_connector"], "sha256": "TBD"}},
            r"config_connector\.sha256: 'TBD' is not a sha256: 64 lowercase hex digits",
        ),
        ({"kserve": None}, r"kserve: Field required"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_file_entry_field_and_reason(tmp_path, changes, message):
    error = refusal(tmp_path, **changes)
    assert error.startswith(f"{tmp_path / 'versions.yaml'}: ")
    assert re.search(message, error), error
    assert "\n" not in error  # one line: a Pulumi program stops with it alone


def test_every_problem_is_reported_at_once(tmp_path):
    error = refusal(tmp_path, cert_manager={"chart": "cert-manager"}, opa_image=1)
    assert "cert_manager.repo: Field required; cert_manager.version: Field required; opa_image: expected" in error


@pytest.mark.parametrize(
    "content, message",
    [("- cert_manager\n", "expected a mapping of entries, got list"), ("cert_manager: [\n", "cannot be read")],
)
def test_a_file_that_is_no_mapping_is_refused(tmp_path, content, message):
    with pytest.raises(VersionsFileError, match=message):
        read_versions(written(tmp_path, content))


def test_a_stack_overrides_fields_of_an_entry_or_a_whole_entry():
    versions = PlatformConfig.model_validate(
        {
            "versions": {
                "cert_manager": {"version": "v1.22.0"},
                "opa_image": "registry.example.com/opa:1.23.0-static",
                "postgresql": {"values": {"image": {"tag": "17.7.0"}}},
            }
        }
    ).versions
    assert versions.cert_manager == pinned_versions().cert_manager.model_copy(update={"version": "v1.22.0"})
    assert versions.opa_image == "registry.example.com/opa:1.23.0-static"
    assert versions.postgresql.values == {"image": {"tag": "17.7.0"}}  # values are replaced as a whole
    assert versions.kserve == pinned_versions().kserve
    assert PlatformConfig().versions is pinned_versions()


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"cert_manager": {"version": 1.22}}, "versions.cert_manager.version: 1.22 is a number"),
        ({"cert_managr": {"version": "v1.22.0"}}, "versions.cert_managr: Extra inputs are not permitted"),
        ({"cert_manager": "v1.22.0"}, "versions.cert_manager: expected a chart pin"),
        ({"greenops_image": "ghcr.io/greenops-platform/greenops"}, "versions.greenops_image: 'ghcr.io/"),
    ],
)
def test_a_bad_override_is_refused_by_entry_and_field(overrides, message):
    with pytest.raises(ValidationError) as caught:
        PlatformConfig.model_validate({"versions": overrides})
    [(where, reason)] = field_errors(caught.value.errors())
    assert f"{where}: {reason}".startswith(message)


def test_the_program_names_a_bad_override():
    from greenops.stack import program

    run_platform({**PROD, "versions": {"kserve": {"chart": ""}}})
    with pytest.raises(
        pulumi.RunError, match=r"greenops:platform\.versions\.kserve\.chart: String should have at least"
    ):
        program.run()


@pytest.fixture
def bad_project_file(tmp_path, monkeypatch):
    """The project's versions.yaml with a typo in it, read afresh."""
    monkeypatch.setattr(pins, "VERSIONS_FILE", written(tmp_path, {**RAW, "kserve": {**RAW["kserve"], "verison": "v1"}}))
    pinned_versions.cache_clear()
    yield
    pinned_versions.cache_clear()


def test_a_bad_file_stops_the_program_with_the_message_alone(bad_project_file):
    from greenops.stack import program

    run_platform(PROD)
    with pytest.raises(VersionsFileError, match=r"versions\.yaml: kserve\.verison: unknown field") as caught:
        program.run()
    assert isinstance(caught.value, pulumi.RunError)  # Pulumi prints a RunError's message, no traceback
