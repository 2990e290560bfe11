"""Product code (``greenops/`` outside ``greenops/local/``, and ``components/``) never imports the
local stand-ins: loopback servers, the local control plane and the demo live in ``greenops/local``
and only tests, benchmarks and the local commands use them."""

from __future__ import annotations

import ast
from pathlib import Path

from greenops.toolpaths import REPO

# The entry points of the embedded local default: the CLI commands that start the loopback
# servers. Their imports are inside the command functions, so nothing else loads the stand-ins.
LOCAL_COMMANDS = {
    ("greenops/cli.py", "cmd_demo"),
    ("greenops/cli.py", "cmd_serve"),
    ("greenops/forecasting/cli.py", "cmd_serve"),
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
