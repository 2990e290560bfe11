"""The Dockerfiles a user with Docker builds say what the daemonless build does: the same Debian
and packages, the same lock, venv, user, environment, entrypoint and labels (no Docker daemon
runs here, so they are checked against release.spec, which the build reads)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from release.images import BUSYBOX_APPLETS
from release.python_env import LOCK
from release.spec import BASE_PACKAGES, DEBIAN_SUITE, GREENOPS, NONROOT, bundle_init_spec, mlserver_spec, opa_spec

PROJECT = Path(__file__).resolve().parents[2]
DOCKERFILES = {
    "greenops": (PROJECT / "Dockerfile", GREENOPS),
    "mlserver-forecasters": (PROJECT / "release/docker/mlserver-forecasters.Dockerfile", mlserver_spec("1.7.1")),
    "opa": (PROJECT / "release/docker/opa.Dockerfile", opa_spec("1.22.0")),
    "bundle-init": (PROJECT / "release/docker/bundle-init.Dockerfile", bundle_init_spec("1.35.0")),
}


def final_stage(path: Path) -> list[dict]:
    """The instructions after the last FROM: what the image is."""
    structure = DockerfileParser(path=str(path)).structure
    last = max(i for i, instruction in enumerate(structure) if instruction["instruction"] == "FROM")
    return structure[last:]


def values(stage: list[dict], instruction: str) -> list[str]:
    return [i["value"] for i in stage if i["instruction"] == instruction]


@pytest.mark.parametrize("name", DOCKERFILES)
def test_the_final_stage_runs_as_the_spec_says(name):
    path, spec = DOCKERFILES[name]
    stage = final_stage(path)
    assert values(stage, "USER") == [f"{NONROOT}:{NONROOT}"]
    assert values(stage, "WORKDIR") == [spec.workdir]
    entrypoint = values(stage, "ENTRYPOINT")
    assert [json.loads(v) for v in entrypoint] == ([list(spec.entrypoint)] if spec.entrypoint else [])
    assert [json.loads(v) for v in values(stage, "CMD")] == ([list(spec.cmd)] if spec.cmd else [])
    parser = DockerfileParser(path=str(path))
    assert parser.envs == dict(spec.env)
    # the build tools stay behind: the final stage installs nothing but its runtime packages
    for run in values(stage, "RUN"):
        assert "pip" not in run and "go build" not in run, run


@pytest.mark.parametrize("name", ["greenops", "mlserver-forecasters"])
def test_the_python_images_are_debian_with_the_same_packages_and_lock(name):
    path, spec = DOCKERFILES[name]
    text = path.read_text()
    stage = final_stage(path)
    assert values(stage, "FROM") == [f"docker.io/library/debian:{DEBIAN_SUITE}-slim"]
    [install] = values(stage, "RUN")
    packages = re.search(r"--no-install-recommends ([a-z0-9. -]+?) &&", install)
    assert packages and tuple(packages.group(1).split()) == BASE_PACKAGES
    lock = LOCK.name if name == "greenops" else "mlserver.lock"
    assert "--require-hashes -r /" in text and lock in text
    venv = spec.entrypoint[0].rsplit("/bin/", 1)[0]
    assert values(stage, "COPY") == [f"--from=build {venv} {venv}"]


def test_bundle_init_has_the_applets_of_the_daemonless_build():
    text = DOCKERFILES["bundle-init"][0].read_text()
    assert f"for applet in {' '.join(BUSYBOX_APPLETS)}; do" in text
