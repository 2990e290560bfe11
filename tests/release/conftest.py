"""One build of every artifact per test session (release.steps.build, as `make release` runs it),
and a real registry on loopback for the suites that publish."""

from __future__ import annotations

import os
import shutil

import pytest

from release import registry, steps

NEEDS = ("mmdebstrap", "umoci", "skopeo", "docker-registry", "runc", "chroot")


@pytest.fixture(scope="session")
def release_tools() -> None:
    if os.geteuid() != 0:
        pytest.skip("building the images needs root (mmdebstrap --mode=root, chroot, runc)")
    missing = [tool for tool in NEEDS if shutil.which(tool) is None]
    assert not missing, f"not installed: {missing} (make release-tools installs them)"


@pytest.fixture(scope="session")
def built(release_tools, tmp_path_factory):
    """Every artifact, built once: the release manifest (release.json) with its output folder."""
    out = tmp_path_factory.mktemp("release")
    manifest = steps.build(out)
    return out, manifest


@pytest.fixture(scope="session")
def local_registry(release_tools, tmp_path_factory):
    with registry.local_registry(tmp_path_factory.mktemp("registry")) as host:
        yield host
