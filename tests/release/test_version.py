"""One version for the release: pyproject.toml's, read by everything that shows one."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from greenops import __version__
from release.spec import GREENOPS

PROJECT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads(PROJECT.joinpath("pyproject.toml").read_text())["project"]["version"]


def test_the_package_the_cli_the_image_and_the_chart_say_one_version():
    cli = subprocess.run([sys.executable, "-m", "greenops", "--version"], capture_output=True, text=True, check=True)
    chart = yaml.safe_load(PROJECT.joinpath("components/charts/vm-template/Chart.yaml").read_text())
    assert __version__ == VERSION
    assert cli.stdout.strip() == f"greenops {VERSION}"
    assert chart["appVersion"] == VERSION
    assert GREENOPS.tag == VERSION
    assert GREENOPS.labels("rev", "t")["org.opencontainers.image.version"] == VERSION


def test_the_changelog_has_a_section_for_the_version():
    changelog = PROJECT.joinpath("CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(VERSION)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.MULTILINE), changelog[
        :500
    ]
