"""The Python side of the release: the wheel and sdist, the locked runtime dependencies, and a
virtualenv installed inside an image's root filesystem by the image's own Python.

The lock (release/requirements.lock) holds every runtime package with its exact version and the
sha256 of the file installed (Linux x86-64, CPython 3.11), so the image's venv is the same on
every build and pip refuses a file that changed. ``python -m release lock`` rewrites it from
pyproject.toml's pins with pip's own resolver (its --report)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from release.layers import normalize_tar_gz
from release.run import PROJECT, Arg, ReleaseError, sh

LOCK = PROJECT / "release" / "requirements.lock"
PIP = "pip==25.3"  # the Makefile's pin: the same resolver makes the lock and installs it


def build_dist(out: Path, epoch: int) -> tuple[Path, Path]:
    """The wheel and the sdist of this checkout, with every timestamp at ``epoch``."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("greenops_platform-*"):
        old.unlink()
    # setuptools' build/ directory would carry files of an earlier build into the wheel
    shutil.rmtree(PROJECT / "build" / "lib", ignore_errors=True)
    argv: list[Arg] = [sys.executable, "-m", "build", "--wheel", "--sdist", "--outdir", out, PROJECT]
    sh("wheel and sdist", argv, env={"SOURCE_DATE_EPOCH": str(epoch)})
    (wheel,) = out.glob("greenops_platform-*.whl")
    (sdist,) = out.glob("greenops_platform-*.tar.gz")
    # the wheel honours SOURCE_DATE_EPOCH; setuptools' sdist keeps the checkout's file times
    return wheel, normalize_tar_gz(sdist, epoch)


def write_lock(requirements: list[str], lock: Path, header: str) -> None:
    """``lock``: what pip resolves ``requirements`` to (binary files only), with each file's sha256.
    Each package the running environment has is held at its version there, so the image runs what
    the tests ran."""
    report = lock.with_suffix(".report.json")
    tested = lock.with_suffix(".tested.txt")
    tested.write_text(sh("installed versions", [sys.executable, "-m", "pip", "freeze", "--exclude-editable"]))
    argv: list[Arg] = [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed"]
    argv += ["--only-binary=:all:", "--report", report, "--constraint", tested, *requirements]
    try:
        sh(f"resolving {lock.name}", argv)
    finally:
        tested.unlink()
    installs = json.loads(report.read_text())["install"]
    report.unlink()
    lines = [header]
    for item in sorted(installs, key=lambda i: i["metadata"]["name"].lower()):
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if name.lower() in {"greenops-platform"}:
            continue
        sha = item["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{name}=={version} --hash=sha256:{sha}")
    lock.write_text("\n".join(lines) + "\n")


def wheelhouse(lock: Path, out: Path) -> Path:
    """Every file of ``lock`` and pip's own wheel, downloaded (from pip's cache when warm) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    base: list[Arg] = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", out]
    sh(f"downloading {lock.name}", [*base, "--require-hashes", "--no-deps", "-r", lock])
    sh("downloading pip", [*base, "--no-deps", PIP])
    return out


def install_venv(rootfs: Path, venv: str, house: Path, epoch: int, *packages: str) -> None:
    """``venv`` inside ``rootfs`` (made if absent) with ``packages`` (pip requirement arguments,
    paths inside the rootfs) installed from ``house`` only, by the image's Python in a chroot.
    Pip runs from its wheel and is not left in the venv. With SOURCE_DATE_EPOCH set, the bytecode
    pip compiles is hash-checked rather than stamped with the install time."""
    inside = rootfs / "tmp" / "wheelhouse"
    if inside.exists():
        shutil.rmtree(inside)
    shutil.copytree(house, inside)
    try:
        python = f"{venv}/bin/python"
        if not rootfs.joinpath(python.lstrip("/")).exists():
            sh("virtualenv", ["chroot", rootfs, "/usr/bin/python3", "-m", "venv", "--without-pip", venv])
        (pip_wheel,) = inside.glob("pip-*.whl")
        pip: list[Arg] = [python, f"/tmp/wheelhouse/{pip_wheel.name}/pip", "install", "--quiet", "--no-index"]
        pip += ["--find-links", "/tmp/wheelhouse", "--no-warn-script-location", "--disable-pip-version-check"]
        env = {"SOURCE_DATE_EPOCH": str(epoch), "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
        sh(f"installing into {venv}", ["chroot", rootfs, *pip, *packages], env=env)
    finally:
        shutil.rmtree(inside, ignore_errors=True)


def installed_files(rootfs: Path, venv: str, distribution: str) -> list[str]:
    """The files pip installed for ``distribution`` (its RECORD), relative to ``rootfs``."""
    site = rootfs / venv.lstrip("/") / "lib" / "python3.11" / "site-packages"
    records = list(site.glob(f"{distribution.replace('-', '_')}-*.dist-info/RECORD"))
    if len(records) != 1:
        raise ReleaseError(f"{distribution}: expected one installed RECORD under {site}, found {len(records)}")
    files = []
    for line in records[0].read_text().splitlines():
        path = (site / line.rsplit(",", 2)[0]).resolve()
        files.append(str(path.relative_to(rootfs.resolve())))
    return files
