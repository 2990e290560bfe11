"""The wheel works without a checkout: installed into a fresh venv, run from elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile

from greenops import __version__
from release import python_env
from release.spec import source


def test_the_wheel_installs_into_a_fresh_venv_and_its_cli_runs(tmp_path):
    wheel, sdist = python_env.build_dist(tmp_path / "dist", source().epoch)
    assert wheel.name == f"greenops_platform-{__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    # what the product reads at run time is in it; the policies' tests and the release tooling are not
    assert "components/versions.yaml" in names and "greenops/catalog/data/regions.json" in names
    assert "greenops/policies/rego/placement.rego" in names
    assert not [n for n in names if n.endswith("_test.rego") or n.startswith(("release/", "tests/"))]
    assert f"greenops_platform-{__version__}/pyproject.toml" in tarfile.open(sdist).getnames()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--require-hashes", "-r", str(python_env.LOCK)], check=True, timeout=900)
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True)
    away = tmp_path / "elsewhere"
    away.mkdir()
    version = subprocess.run([str(venv / "bin" / "greenops"), "--version"], cwd=away, capture_output=True, text=True)
    assert version.stdout.strip() == f"greenops {__version__}", version.stderr
    catalog = subprocess.run(
        [str(venv / "bin" / "greenops"), "catalog", "--provider", "azure", "-o", "json"],
        cwd=away,
        capture_output=True,
        text=True,
    )
    assert catalog.returncode == 0, catalog.stderr
    assert any(r["eu"] for r in json.loads(catalog.stdout))
