"""The documentation site: mkdocs builds it with --strict (no broken link or anchor), every page under
docs/ is in the nav, and README.md stays a landing page whose first commands are the two that set
everything up."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from greenops.common.toolpaths import REPO

DOCS = REPO / "docs"
README = REPO / "README.md"
THESIS = "A Policy-Driven Kubernetes-Based Architecture for Resource Management in Multi-Cloud Environments"


def mkdocs() -> str:
    # this interpreter's virtualenv: mkdocs and mkdocs-material are pinned in pyproject.toml's dev extra
    found = Path(sys.executable).with_name("mkdocs")
    if not found.exists():
        pytest.skip("mkdocs is not installed: make setup (it is pinned in pyproject.toml's dev extra)")
    return str(found)


def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run(
        [mkdocs(), "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        # material's end-of-life banner on every build says nothing about these pages
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for page in ("index.html", "architecture/index.html", "reference/cli/index.html"):
        assert (site / page).is_file(), page


def nav_pages(nav: list) -> set[str]:
    pages: set[str] = set()
    for item in nav:
        if isinstance(item, str):
            pages.add(item)
        elif isinstance(item, dict):
            for value in item.values():
                pages |= nav_pages(value) if isinstance(value, list) else {value}
    return pages


def test_every_page_is_in_the_nav():
    config = pytest.importorskip("mkdocs.config")
    nav = config.load_config(str(REPO / "mkdocs.yml"))["nav"]
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert nav_pages(nav) == on_disk
    # generated from the code by their own tooling: the nav names them by these paths
    assert {"reference/configuration.md", "reference/cli.md"} <= on_disk


def test_the_nav_reader_sees_nested_sections():
    nav = [{"Home": "index.md"}, {"Ops": ["ops/index.md", {"Install": "ops/install.md"}]}, "loose.md"]
    assert nav_pages(nav) == {"index.md", "ops/index.md", "ops/install.md", "loose.md"}


def test_the_readme_is_a_landing_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    # the first commands in the README are the two that set everything up (CI runs the second)
    first_block = re.search(r"^```bash\n(.*?)^```", text, re.M | re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands[:2] == ["make demo", "make test"]
    # named by its title once, however the paragraph is wrapped
    assert " ".join(text.split()).count(THESIS) == 1
    assert "make docs" in text


def test_the_readme_links_to_pages_that_exist():
    targets = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", README.read_text())
    assert targets
    assert [t for t in targets if not (REPO / t).is_file()] == []
