"""Config Connector's operator: the program applies YAML taken out of the pinned, checksummed release
bundle, never the tarball itself (issue 16). No network: archives are built here with the upstream
layout and served through httpx.MockTransport."""

from __future__ import annotations

import httpx
import pulumi
import pytest
import yaml

from components import operator_bundle
from components.operator_bundle import (
    BundleChecksumError,
    BundleDownloadError,
    BundleLayoutError,
    extract_manifest,
    operator_manifest,
)
from components.platform_config import VERSIONS_FILE
from tests.components.bundles import OPERATOR_YAML, UPSTREAM_LAYOUT, build_bundle, sha256
from tests.components.test_platform_mocks import PROD, collect, of, run_platform

# bound at collection, before tests/conftest.py's autouse fixture swaps in the offline stand-in
REAL_FETCH = operator_bundle.fetch
URL = "https://storage.googleapis.com/configconnector-operator/1.156.0/release-bundle.tar.gz"
MANIFEST = "operator-system/configconnector-operator.yaml"


class Served:
    """An HTTP server stand-in that counts requests."""

    def __init__(self, body: bytes = b"", status: int = 200, error: Exception | None = None):
        self.body, self.status, self.error, self.requests = body, status, error, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(str(request.url))
        if self.error:
            raise self.error
        return httpx.Response(self.status, content=self.body)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def test_the_pin_names_the_archive_its_checksum_and_the_manifest_inside():
    pin = yaml.safe_load(VERSIONS_FILE.read_text())["config_connector"]
    assert pin["operator_bundle"].startswith("https://") and pin["operator_bundle"].endswith("/release-bundle.tar.gz")
    assert f"/{pin['version']}/" in pin["operator_bundle"]  # a versioned archive, never latest/
    assert operator_bundle.SHA256.match(pin["sha256"])
    assert pin["operator_manifest"] == MANIFEST


def test_the_platform_applies_yaml_from_the_bundle_not_the_tarball():
    m = collect(PROD)
    # what issue 16 found: a ConfigFile given release-bundle.tar.gz, which the provider reads as YAML
    for r in m.resources:
        if r.typ.startswith("kubernetes:yaml/"):
            sources = [r.inputs.get("file"), *(r.inputs.get("files") or [])]
            assert not [s for s in sources if s and s.endswith((".tar.gz", ".tgz", ".zip"))], (r.typ, r.name)
    assert not of(m, "kubernetes:yaml/v2:ConfigFile")
    [group] = [r for r in of(m, "kubernetes:yaml/v2:ConfigGroup") if r.name == "kcc-operator"]
    assert group.inputs["yaml"] == OPERATOR_YAML  # the member the upstream manual install applies
    docs = list(yaml.safe_load_all(group.inputs["yaml"]))
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "StatefulSet"]


def test_download_is_verified_and_cached(tmp_path):
    archive = build_bundle()
    server = Served(archive)
    assert REAL_FETCH(URL, sha256(archive), cache=tmp_path, transport=server.transport) == archive
    assert (tmp_path / f"{sha256(archive)}.tar.gz").read_bytes() == archive
    # the second run (every preview and up) reads the cache: no download
    assert REAL_FETCH(URL, sha256(archive), cache=tmp_path, transport=server.transport) == archive
    assert server.requests == [URL]


def test_a_checksum_mismatch_is_refused_by_name_and_nothing_is_cached(tmp_path):
    archive, pinned = build_bundle(), sha256(b"the archive upstream published")
    with pytest.raises(
        BundleChecksumError, match=rf"{URL}: sha256 mismatch: pinned {pinned}, downloaded {sha256(archive)}"
    ):
        REAL_FETCH(URL, pinned, cache=tmp_path, transport=Served(archive).transport)
    assert list(tmp_path.iterdir()) == []


def test_a_corrupted_cache_entry_is_fetched_again(tmp_path):
    archive = build_bundle()
    (tmp_path / f"{sha256(archive)}.tar.gz").write_bytes(archive[:20])  # e.g. a truncated copy
    server = Served(archive)
    assert REAL_FETCH(URL, sha256(archive), cache=tmp_path, transport=server.transport) == archive
    assert len(server.requests) == 1 and (tmp_path / f"{sha256(archive)}.tar.gz").read_bytes() == archive


@pytest.mark.parametrize(
    "server, message",
    [
        (Served(status=404), "download failed: HTTP 404"),
        (Served(error=httpx.ConnectError("no route to host")), "download failed: no route to host"),
    ],
)
def test_a_failed_download_names_the_url(tmp_path, server, message):
    with pytest.raises(BundleDownloadError, match=f"{URL}: {message}"):
        REAL_FETCH(URL, "0" * 64, cache=tmp_path, transport=server.transport)


def test_an_unpinned_checksum_is_refused(tmp_path):
    with pytest.raises(BundleChecksumError, match="no valid sha256 pinned"):
        REAL_FETCH(URL, "", cache=tmp_path, transport=Served(build_bundle()).transport)


@pytest.mark.parametrize("prefix", ["", "./"])
def test_extraction_follows_the_upstream_layout(prefix):
    assert extract_manifest(build_bundle(prefix=prefix), MANIFEST, URL) == OPERATOR_YAML


@pytest.mark.parametrize(
    "archive, message",
    [
        (
            build_bundle({"operator-system/other.yaml": OPERATOR_YAML}),
            f"no {MANIFEST} in the archive; it holds: operator-system/other.yaml",
        ),
        (build_bundle({MANIFEST: build_bundle()}), f"{MANIFEST} is not YAML"),
        (build_bundle({MANIFEST: "just: a mapping\n"}), f"{MANIFEST} is not a Kubernetes manifest"),
        (b"<html>not found</html>", "not a tar archive"),
    ],
)
def test_a_bundle_without_the_manifest_is_refused_by_name(archive, message):
    with pytest.raises(BundleLayoutError, match=f"{URL}: {message}"):
        extract_manifest(archive, MANIFEST, URL)


def test_the_autopilot_variant_is_one_override_away(tmp_path):
    archive = build_bundle()
    pin = {
        "operator_bundle": URL,
        "sha256": sha256(archive),
        "operator_manifest": "operator-system/autopilot-configconnector-operator.yaml",
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(operator_bundle, "fetch", REAL_FETCH)
        text = operator_manifest(pin, cache=tmp_path, transport=Served(archive).transport)
    assert text == UPSTREAM_LAYOUT["operator-system/autopilot-configconnector-operator.yaml"]


def test_a_republished_bundle_stops_the_program_before_anything_is_applied(monkeypatch, tmp_path):
    """The pinned sha256 against an archive that is not the pinned one: the preview fails, by name."""
    from greenops.stack import program

    served = Served(build_bundle())
    monkeypatch.setattr(
        operator_bundle, "fetch", lambda url, sha, **_: REAL_FETCH(url, sha, cache=tmp_path, transport=served.transport)
    )
    run_platform(PROD)
    with pytest.raises(pulumi.RunError, match=r"release-bundle\.tar\.gz: sha256 mismatch: pinned [0-9a-f]{64}"):
        program.run()
    assert served.requests and served.requests[0].startswith("https://storage.googleapis.com/configconnector-operator/")
