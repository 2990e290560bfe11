"""The pinned pulumi CLI writes an automatic debug log under $PULUMI_HOME/logs on every command,
with no setting to turn it off; in greenops' own Pulumi home a file in that folder's place turns it
off (greenops.common.toolpaths.without_automatic_log). The first test fails the day the CLI stops
writing it (or writes it elsewhere), so the workaround is looked at again; the second that the CLI
runs on without it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from greenops.common.toolpaths import (
    AUTOMATIC_LOG_OFF,
    OWN_PULUMI_HOME,
    pulumi_env,
    tool_path,
    with_automatic_log,
    without_automatic_log,
)
from tests.support.common import require_tool

pytestmark = pytest.mark.tools


def stack_ls(project: Path, home: Path) -> subprocess.CompletedProcess:
    (project / "Pulumi.yaml").write_text("name: logs-probe\nruntime: yaml\n")
    env = pulumi_env(
        {
            "PULUMI_HOME": str(home),
            "PULUMI_BACKEND_URL": f"file://{project / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": "probe",
        }
    )
    (project / "state").mkdir(exist_ok=True)
    return subprocess.run(
        [tool_path("pulumi"), "stack", "ls", "--non-interactive"], cwd=project, env=env, capture_output=True, text=True
    )


def test_the_cli_writes_its_log_in_a_home_that_does_not_refuse_it(tmp_path):
    require_tool("pulumi")
    home = tmp_path / "home"
    run = stack_ls(tmp_path, home)
    assert run.returncode == 0, run.stderr
    assert [f.suffix for f in (home / "logs").iterdir()] == [".log"]


def test_without_the_folder_the_cli_writes_no_log_and_runs_on(tmp_path):
    require_tool("pulumi")
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "logs" / "earlier.log").write_text("kept")
    without_automatic_log(home)
    assert (home / "logs").read_text() == AUTOMATIC_LOG_OFF
    assert (home / "logs.kept" / "earlier.log").read_text() == "kept"  # what was logged before stays
    run = stack_ls(tmp_path, home)
    assert run.returncode == 0 and "NAME" in run.stdout, run.stderr
    assert sorted(p.name for p in home.iterdir()) == ["logs", "logs.kept"]
    assert (home / "logs").read_text() == AUTOMATIC_LOG_OFF

    with_automatic_log(home)  # GREENOPS_PULUMI_LOGS=on: the CLI logs again
    assert stack_ls(tmp_path, home).returncode == 0
    assert [f.suffix for f in (home / "logs").iterdir()] == [".log"]


def test_only_greenops_own_home_is_changed(tmp_path):
    chosen = tmp_path / "mine"
    pulumi_env({"PULUMI_HOME": str(chosen)})
    assert not chosen.exists()
    pulumi_env()
    assert (OWN_PULUMI_HOME / "logs").is_file()
