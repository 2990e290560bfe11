"""docs/architecture.md tells the truth about the packages: its layers are import-linter's, every
package of the code is in one, and the package-level import graph (grimp's, the graph import-linter
checks) has no circle, with no exception listed."""

from __future__ import annotations

import re
import tomllib

import pytest

from greenops.common.toolpaths import REPO

ARCHITECTURE = REPO / "docs" / "architecture.md"


def contract() -> dict:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [c for c in config["contracts"] if c["type"] == "layers"]
    return layers


def documented_layers() -> list[str]:
    text = ARCHITECTURE.read_text()
    table = text.split("<!-- layers: top to bottom, as in pyproject.toml -->", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    return [" | ".join(re.findall(r"`([^`]+)`", row.split("|", 2)[2])) for row in rows]


def package_graph():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("greenops", "components", include_external_packages=False, cache_dir=None)

    def package(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2]) if parts[0] == "greenops" and len(parts) > 1 else parts[0]

    edges: set[tuple[str, str]] = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = package(importer), package(imported)
            if a != b and "greenops" not in (a, b):  # the root package's __init__ is no layer
                edges.add((a, b))
    return edges


def circles(edges: set[tuple[str, str]]) -> list[set[str]]:
    """The strongly connected components of more than one package (Tarjan's algorithm)."""
    nodes = sorted({n for e in edges for n in e})
    succ = {n: sorted(b for a, b in edges if a == n) for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(n: str) -> None:
        index[n] = low[n] = len(index)
        stack.append(n)
        for m in succ[n]:
            if m not in index:
                visit(m)
                low[n] = min(low[n], low[m])
            elif m in stack:
                low[n] = min(low[n], index[m])
        if low[n] == index[n]:
            component = set()
            while True:
                m = stack.pop()
                component.add(m)
                if m == n:
                    break
            if len(component) > 1:
                found.append(component)

    for n in nodes:
        if n not in index:
            visit(n)
    return found


def test_the_page_lists_import_linters_layers():
    assert documented_layers() == contract()["layers"]


def test_every_package_is_in_a_layer():
    layered = {p.strip() for layer in contract()["layers"] for p in layer.split("|")}
    packages = {f"greenops.{p.name}" for p in (REPO / "greenops").iterdir() if (p / "__init__.py").exists()}
    modules = {f"greenops.{p.stem}" for p in (REPO / "greenops").glob("*.py") if p.stem != "__init__"}
    assert packages | modules | {"components"} == layered


def test_the_package_graph_has_no_circle_and_the_contract_no_exception():
    assert "ignore_imports" not in contract()
    edges = package_graph()
    assert len(edges) > 50  # the graph is really read: greenops has some hundred package edges
    assert circles(edges) == []


def test_a_circle_is_found():
    assert circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [{"a", "b", "c"}]


def test_the_page_names_every_test_suite():
    text = ARCHITECTURE.read_text()
    named = re.findall(r"`([a-z0-9_]+)`", text.split("<!-- suites -->", 1)[1].split("<!-- /suites -->", 1)[0])
    suites = sorted(
        p.name
        for p in (REPO / "tests").iterdir()
        if p.is_dir() and p.name not in ("support", "golden") and any(p.glob("test_*.py"))
    )
    assert named == suites
