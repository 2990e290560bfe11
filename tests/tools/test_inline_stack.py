"""automation.inline_stack never rewrites a project's own file, whichever of Pulumi's names it has."""

from __future__ import annotations

import pytest

from greenops.engine import automation
from tests.support.common import require_tool

PROJECT_FILE = "name: someone-elses\nruntime:\n  name: python\n  options:\n    virtualenv: venv\n"


@pytest.mark.parametrize("ext", ["yaml", "yml", "json"])
def test_a_project_file_of_any_name_is_kept(tmp_path, ext):
    require_tool("pulumi")
    text = '{"name": "someone-elses", "runtime": "python"}\n' if ext == "json" else PROJECT_FILE
    (tmp_path / f"Pulumi.{ext}").write_text(text)
    (tmp_path / "state").mkdir()
    env = {"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "test"}
    automation.inline_stack("kept", lambda: None, tmp_path, env, project="someone-elses")
    assert (tmp_path / f"Pulumi.{ext}").read_text() == text
    project_files = {f"Pulumi.{e}" for e in ("yaml", "yml", "json")}
    assert [p.name for p in tmp_path.glob("Pulumi.*") if p.name in project_files] == [f"Pulumi.{ext}"]


def test_a_folder_without_one_gets_one_naming_the_project(tmp_path):
    require_tool("pulumi")
    (tmp_path / "state").mkdir()
    env = {"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "test"}
    automation.inline_stack("fresh", lambda: None, tmp_path, env, project="greenops-scratch")
    assert "name: greenops-scratch" in (tmp_path / "Pulumi.yaml").read_text()
