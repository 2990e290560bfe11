"""Where test support lives: conftest.py files hold fixtures (and pytest's hooks) only, the rest is
in tests/support, and the benchmarks import nothing from tests/."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.common import REPO


def not_fixtures(conftest: Path) -> list[str]:
    """The public functions and classes of ``conftest`` that are neither fixtures nor pytest hooks
    (a private helper of its fixtures may stay beside them)."""
    out = []
    for node in ast.parse(conftest.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            decorators = [ast.unparse(d) for d in node.decorator_list]
            hook, private = node.name.startswith("pytest_"), node.name.startswith("_")
            if not hook and not private and not any("fixture" in d for d in decorators):
                out.append(node.name)
    return out


def imports_of(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def test_conftest_files_hold_fixtures_only():
    found = {str(p.relative_to(REPO)): not_fixtures(p) for p in sorted((REPO / "tests").rglob("conftest.py"))}
    assert found and {p: names for p, names in found.items() if names} == {}


def test_no_test_imports_a_conftest():
    importing = [
        str(p.relative_to(REPO))
        for p in sorted((REPO / "tests").rglob("*.py"))
        if any(m == "conftest" or m.endswith(".conftest") for m in imports_of(p))
    ]
    assert importing == []


def test_the_benchmarks_import_nothing_from_tests():
    importing = {
        str(p.relative_to(REPO)): sorted(m for m in imports_of(p) if m == "tests" or m.startswith("tests."))
        for p in sorted((REPO / "benchmarks").glob("*.py"))
    }
    assert importing and {p: m for p, m in importing.items() if m} == {}


def test_the_checks_see_what_they_look_for(tmp_path):
    conftest = tmp_path / "conftest.py"
    conftest.write_text(
        "import pytest\nfrom tests.conftest import x\n\n"
        "@pytest.fixture\ndef ok():\n    pass\n\ndef helper():\n    pass\n\nclass _Private:\n    pass\n"
    )
    assert not_fixtures(conftest) == ["helper"]
    assert "tests.conftest" in imports_of(conftest)
