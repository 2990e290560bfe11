"""Product code keeps to its lines. It (``greenops/`` outside ``greenops/local/``, and ``components/``)
never imports the local stand-ins: loopback servers, the local control plane and the demo live in
``greenops/local`` and only tests, benchmarks and the local commands use them. And each package of
``greenops/`` imports only what its place in the architecture allows (FORBIDDEN, below)."""

from __future__ import annotations

import ast
from pathlib import Path

from greenops.common.toolpaths import REPO

# The entry points of the embedded local default: the CLI commands that start the loopback
# servers. Their imports are inside the command functions, so nothing else loads the stand-ins.
LOCAL_COMMANDS = {
    ("greenops/cli/__init__.py", "cmd_demo"),
    ("greenops/cli/__init__.py", "cmd_serve"),
    ("greenops/cli/forecast.py", "cmd_serve"),
}


def product_modules() -> list[Path]:
    local = REPO / "greenops" / "local"
    return [f for f in (REPO / "greenops").rglob("*.py") if not f.is_relative_to(local)] + list(
        (REPO / "components").rglob("*.py")
    )


def stand_in_imports(path: Path) -> list[tuple[str, int, str]]:
    """(enclosing function or "<module>", line, module) for each import of greenops.local."""
    found = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            scope = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            names = []
            if isinstance(child, ast.ImportFrom) and child.module:
                names = [child.module] + [f"{child.module}.{a.name}" for a in child.names]
            elif isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            hit = next((n for n in names if n == "greenops.local" or n.startswith("greenops.local.")), None)
            if hit:
                found.append((where, child.lineno, hit))
            visit(child, scope)

    visit(ast.parse(path.read_text(), str(path)), "<module>")
    return found


def test_product_code_does_not_import_the_stand_ins():
    offenders = []
    for path in product_modules():
        rel = path.relative_to(REPO).as_posix()
        offenders += [
            f"{rel}:{line} ({where}) imports {module}"
            for where, line, module in stand_in_imports(path)
            if (rel, where) not in LOCAL_COMMANDS
        ]
    assert offenders == []


def test_the_scan_sees_an_import_of_the_stand_ins(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n\ndef f():\n    from greenops.local.controlplane import free_port\n"
        "from greenops import local\nimport greenops.local.opa\n"
    )
    assert stand_in_imports(probe) == [
        ("f", 4, "greenops.local.controlplane"),
        ("<module>", 5, "greenops.local"),
        ("<module>", 6, "greenops.local.opa"),
    ]
    assert len(product_modules()) > 50


# The lines between greenops' packages (docs/architecture.md): what each may never import.
# common is the base: it uses only the tracing helper, which itself imports nothing of greenops.
# insight reads the record and the stacks' outputs, never the engine that writes them. The scheduler
# service and its record know nothing of Pulumi. Policy sees only the catalog and the workload model.
PACKAGES = sorted(p.name for p in (REPO / "greenops").iterdir() if (p / "__init__.py").is_file())
FORBIDDEN = {
    "common": set(PACKAGES) - {"common"},
    "insight": {"engine", "stack", "provider", "controller", "local"},
    "scheduler": {"engine", "stack", "provider", "controller", "charts", "local"},
    "reservations": {"engine", "stack", "provider", "controller", "charts", "local"},
    "identity": {"engine", "stack", "provider", "controller", "charts", "local"},
    "policies": set(PACKAGES) - {"policies", "catalog", "common", "models"},
}
ALLOWED = {("common", "greenops.observability.tracing")}


def greenops_imports(path: Path) -> set[str]:
    """Every greenops module ``path`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{a.name}" for a in node.names}  # what is imported, by its full name
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("greenops.")}


def crossings(package: str, root: Path = REPO) -> list[str]:
    out = []
    for path in sorted((root / "greenops" / package).rglob("*.py")):
        for module in sorted(greenops_imports(path)):
            target = module.split(".")[1]
            allowed = any(module == a or module.startswith(a + ".") for p, a in ALLOWED if p == package)
            if target in FORBIDDEN[package] and not allowed:
                out.append(f"{path.relative_to(root).as_posix()} imports {module}")
    return out


def test_every_package_keeps_to_its_lines():
    assert {p: crossings(p) for p in FORBIDDEN} == {p: [] for p in FORBIDDEN}


def test_the_root_holds_only_the_entry_points_and_packages():
    loose = sorted(f.name for f in (REPO / "greenops").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]
    assert {"common", "stack", "engine", "insight", "scheduler", "policies"} <= set(PACKAGES)


def test_the_line_check_sees_a_crossing(tmp_path):
    probe = tmp_path / "greenops" / "insight" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from greenops.common.clock import now\n\ndef f():\n    from greenops.engine import automation\n")
    assert crossings("insight", root=tmp_path) == ["greenops/insight/probe.py imports greenops.engine.automation"]
    (tmp_path / "greenops" / "common").mkdir()
    (tmp_path / "greenops" / "common" / "a.py").write_text("from greenops.observability import tracing, names\n")
    assert crossings("common", root=tmp_path) == ["greenops/common/a.py imports greenops.observability.names"]
