"""One build of every artifact per test session (release.steps.build, as `make release` runs it),
and a real registry on loopback for the suites that publish: shared by tests/release and the real
node's suites (tests/node), which run the images it built (a plugin of tests/conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

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
    """Every artifact, built once: the release manifest (release.json) with its output folder.
    GREENOPS_TEST_RELEASE=DIR reuses a developer's `python -m release --out DIR build` instead (what
    it holds is what the suites see: tests/release then checks that build, not a new one)."""
    if reuse := os.environ.get("GREENOPS_TEST_RELEASE"):
        return Path(reuse), json.loads(Path(reuse, steps.MANIFEST).read_text())
    out = tmp_path_factory.mktemp("release")
    manifest = steps.build(out)
    return out, manifest


@pytest.fixture(scope="session")
def local_registry(release_tools, tmp_path_factory):
    with registry.local_registry(tmp_path_factory.mktemp("registry")) as host:
        yield host
