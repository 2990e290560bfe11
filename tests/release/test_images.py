"""The images start as a kubelet would start them: from the unpacked image (umoci), under runc, as
UID 65532 with a read-only root and no capabilities. And the same commit builds the same digests."""

from __future__ import annotations

import json
import shutil
import tarfile
import time
from pathlib import Path

import httpx
import pytest

from greenops.local.controlplane import free_port
from release import steps
from release.oci import blob
from release.spec import DEBIAN_BASE_DATE, NONROOT
from tests.support import containers


def _image(built, name: str) -> tuple[Path, str]:
    _, manifest = built
    entry = manifest["images"][name]
    return Path(entry["layout"]), entry["tag"]


def _config(built, name: str) -> dict:
    layout, _ = _image(built, name)
    manifest = json.loads(blob(layout, built[1]["images"][name]["digest"]))
    return json.loads(blob(layout, manifest["config"]["digest"]))


@pytest.fixture(scope="module")
def bundle(built, tmp_path_factory):
    """Each image unpacked once for the module (the greenops image is 2 GB unpacked); every run
    rewrites the bundle's config.json and starts from its read-only root."""
    unpacked: dict[str, Path] = {}
    scratch = tmp_path_factory.mktemp("bundles")

    def unpack(name: str) -> Path:
        if name not in unpacked:
            layout, tag = _image(built, name)
            unpacked[name] = containers.unpack(layout, tag, scratch / name)
        return unpacked[name]

    yield unpack
    shutil.rmtree(scratch, ignore_errors=True)


def test_each_image_runs_as_the_nonroot_user_and_names_its_release(built):
    _, manifest = built
    for name, entry in manifest["images"].items():
        config = _config(built, name)
        assert config["config"]["User"] == f"{NONROOT}:{NONROOT}", name
        labels = config["config"]["Labels"]
        assert labels["org.opencontainers.image.revision"] == manifest["revision"], name
        assert labels["io.greenops.release"] == manifest["version"], name
        # every timestamp is the commit's: nothing of the build machine's clock is in the image
        assert {h["created"] for h in config["history"]} == {config["created"]}, name
        assert entry["size"] > 0


def test_every_entry_of_every_layer_carries_a_fixed_time(built):
    """No time of the build machine's clock in any layer: the cached trees' layers (Debian, the
    venvs) are at the base date, the rest at the commit's, whenever each tree was made."""
    _, manifest = built
    allowed = {manifest["epoch"], DEBIAN_BASE_DATE}
    for name, entry in manifest["images"].items():
        layout = Path(entry["layout"])
        for layer in json.loads(blob(layout, entry["digest"]))["layers"]:
            algorithm, hex_ = layer["digest"].split(":")
            with tarfile.open(layout / "blobs" / algorithm / hex_, "r:gz") as archive:
                times = {int(member.mtime) for member in archive}
            assert times <= allowed, (name, layer["digest"], sorted(times - allowed)[:3])


def test_the_scheduler_answers_healthz_from_the_unpacked_image(bundle):
    port = free_port()
    args = ["/opt/greenops/bin/greenops-scheduler", "--host", "127.0.0.1", "--port", str(port)]
    args += ["--database", "sqlite:////tmp/record.db"]
    with containers.started(bundle("greenops"), args, {"GREENOPS_SCHEDULER_ADMIN_TOKEN": "x" * 32}) as (name, log):
        deadline = time.monotonic() + 60
        answer = None
        while time.monotonic() < deadline:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        assert answer is not None and answer.status_code == 200, log.read_text()[-2000:]
        assert containers.process_ids(name) == (NONROOT, NONROOT)


def test_the_controller_and_the_cli_print_their_help(bundle):
    root = bundle("greenops")
    controller = containers.run(root, ["python", "-m", "greenops.controller", "--help"])
    assert controller.returncode == 0, controller.stderr
    assert "usage:" in controller.stdout
    cli = containers.run(root, ["greenops", "--help"])
    assert cli.returncode == 0, cli.stderr
    assert "Carbon-aware VM placement" in cli.stdout
    # the catalog reads data/ from the installed package, not from a checkout
    catalog = containers.run(root, ["greenops", "catalog", "--provider", "gcp", "-o", "json"])
    assert catalog.returncode == 0, catalog.stderr
    assert any(r["region"] == "europe-west9" for r in json.loads(catalog.stdout))


def test_the_root_filesystem_is_read_only_for_the_process(bundle):
    wrote = containers.run(bundle("greenops"), ["python", "-c", "open('/opt/greenops/x', 'w')"])
    assert wrote.returncode != 0
    assert "Read-only file system" in wrote.stderr


def test_opa_and_bundle_init_run(bundle, tmp_path):
    opa = containers.run(bundle("opa"), ["/opa", "version"])
    assert opa.returncode == 0, opa.stderr
    assert "Version: 1." in opa.stdout
    init = containers.run(
        bundle("bundle-init"), ["sh", "-c", "mkdir -p /tmp/b && cp /etc/group /tmp/b/g && cat /tmp/b/g"]
    )
    assert init.returncode == 0, init.stderr
    assert "nonroot:x:65532:" in init.stdout


def test_mlserver_prints_its_version(bundle):
    mlserver = containers.run(bundle("mlserver-forecasters"), ["/opt/mlserver/bin/mlserver", "--version"], timeout=120)
    assert mlserver.returncode == 0, mlserver.stderr
    assert "1.7.1" in mlserver.stdout


def test_the_same_commit_builds_the_same_digests(built, tmp_path, monkeypatch):
    """A second build, its greenops image from a cold cache (Debian root filesystem and venv made
    again), gives every artifact the same digest."""
    _, first = built
    monkeypatch.setenv("GREENOPS_RELEASE_CACHE", str(tmp_path / "cold-cache"))
    try:
        second = steps.build(tmp_path / "second", only=["greenops"])
        monkeypatch.delenv("GREENOPS_RELEASE_CACHE")
        again = steps.build(tmp_path / "third", only=["opa", "bundle-init", "mlserver-forecasters"])
    finally:
        for big in ("cold-cache", "second", "third"):  # gigabytes each: not kept for pytest's history
            shutil.rmtree(tmp_path / big, ignore_errors=True)
    digests = {name: e["digest"] for name, e in {**second["images"], **again["images"]}.items()}
    assert digests == {name: e["digest"] for name, e in first["images"].items()}
    assert second["policy"]["digest"] == first["policy"]["digest"]
    assert second["chart"]["sha256"] == first["chart"]["sha256"]
    assert second["dist"] == first["dist"]
