"""Ruff's lint and format check over the repository, and mypy's strict type check of greenops, as
configured in pyproject.toml: part of the test suite, so `make test` (and CI) fails on a lint error,
an unformatted file or a type error."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from greenops.common.toolpaths import REPO


def ruff() -> str:
    found = Path(sys.executable).with_name("ruff")
    if found.exists():
        return str(found)
    if shutil.which("ruff"):
        return "ruff"
    pytest.skip("ruff is not installed: make setup (it is pinned in pyproject.toml's dev extra)")


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command):
    result = subprocess.run([ruff(), *command, "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def mypy() -> list[str]:
    # this interpreter's mypy: it reads the packages and stubs installed beside the code it checks
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed: make setup (it is pinned in pyproject.toml's dev extra)")
    return [sys.executable, "-m", "mypy"]


def test_mypy():
    # no arguments: what to check, and how strictly, is pyproject.toml's [tool.mypy]
    result = subprocess.run(mypy(), cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_layers_hold():
    """import-linter's contracts in pyproject.toml ([tool.importlinter]): the package layers of
    docs/architecture.md, and the siblings that may not import each other."""
    found = Path(sys.executable).with_name("lint-imports")
    if not found.exists():
        pytest.skip("import-linter is not installed: make setup (it is pinned in pyproject.toml's dev extra)")
    # (this checkout's packages, whichever checkout the virtualenv was installed from)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([str(found), "--no-cache"], cwd=REPO, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = len(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])
    assert contracts >= 5  # the layers, three independences, the product not importing release/
    assert f"Contracts: {contracts} kept, 0 broken." in result.stdout
