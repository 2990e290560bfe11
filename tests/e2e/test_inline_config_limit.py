"""1000 workloads written inline in a stack file, run by the real engine: through the `pulumi` CLI
(whose language host starts the program with the config in its environment) and through the
Automation API (whose inline program gets it without one). Before, the CLI failed with "could not
run language executor: [Errno 7] Argument list too long" and no word of greenops:workloadsFrom;
now both paths refuse the stack, saying why and what to do."""

from __future__ import annotations

import json
import subprocess

import pytest

from greenops.common.errors import GreenOpsError
from greenops.common.toolpaths import TOOLS_BIN, pulumi_env
from greenops.engine import automation
from greenops.stack.inline_config import ENVIRONMENT_STRING_LIMIT
from tests.support.common import require_tool
from tests.support.engine import project_beside_the_repo, render_mode_config, require_engine, small_job

pytestmark = pytest.mark.e2e
N = 1000


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    require_engine()
    folder = tmp_path_factory.mktemp("inline")
    workloads = [small_job(f"job-{i}", "2030-01-01T00:00:00Z") for i in range(N)]
    assert len(json.dumps(workloads)) > ENVIRONMENT_STRING_LIMIT
    config = render_mode_config("http://127.0.0.1:1", "http://127.0.0.1:2", folder / "rendered", workloads=workloads)
    project_beside_the_repo(folder, "inline", config)
    (folder / "state").mkdir()
    return folder


def env_of(folder) -> dict[str, str]:
    return {"PULUMI_BACKEND_URL": f"file://{folder / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "inline"}


def test_the_cli_refuses_inline_config_too_large_for_the_environment(project):
    require_tool("pulumi-language-python")  # the language host that starts the program
    automation.stack("inline", work_dir=project, env=env_of(project))  # the stack exists
    result = subprocess.run(
        [str(TOOLS_BIN / "pulumi"), "preview", "--stack", "inline", "--non-interactive", "--color", "never"],
        cwd=project,
        env=pulumi_env(env_of(project)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Argument list too long" not in out
    assert "the stack's config is " in out and "greenops:workloadsFrom" in out, out[-3000:]


def test_the_automation_api_refuses_the_same_stack(project):
    st = automation.stack("inline", work_dir=project, env=env_of(project))
    with pytest.raises(GreenOpsError) as info:
        automation.run(st, "preview", stream=False)
    assert "the stack's config is " in str(info.value) and "greenops:workloadsFrom" in str(info.value)
