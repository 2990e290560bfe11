"""1000 workloads, declared in files, previewed by the real engine through the Automation API and
through the `pulumi` CLI. Before greenops:workloadsFrom, the config alone failed both ("Argument list
too long"); before the pickler fix, the Automation API's preview died with a RecursionError a few
hundred Placements in. Figures for up, reconcile and memory are in benchmarks/scale.py."""

from __future__ import annotations

import subprocess
import threading
import time
from datetime import UTC, datetime

import psutil
import pytest

from benchmarks.scale import write_workloads
from greenops.common.toolpaths import TOOLS_BIN, pulumi_env
from greenops.engine import automation
from tests.support.engine import project_beside_the_repo, render_mode_config, require_engine

pytestmark = pytest.mark.e2e
N = 1000
CLI_MEMORY_LIMIT = 2 * 2**30  # the bound for the pulumi CLI at 1000 workloads


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project folder beside the repository: its Pulumi.yaml runs the repository's program, its
    stack file holds settings only, and the workloads are per-tenant files under workloads/."""
    require_engine()
    folder = tmp_path_factory.mktemp("scale")
    config = render_mode_config(
        "http://127.0.0.1:1", "http://127.0.0.1:2", folder / "rendered", workloadsFrom="workloads"
    )
    project_beside_the_repo(folder, "scale", config)
    write_workloads(folder / "workloads", N, datetime.now(UTC))  # this preview runs on the wall clock
    (folder / "state").mkdir()
    return folder


def env_of(folder) -> dict[str, str]:
    return {"PULUMI_BACKEND_URL": f"file://{folder / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "scale"}


def test_the_automation_api_previews_1000_workloads_from_files(project):
    st = automation.stack("scale", work_dir=project, env=env_of(project))
    t = time.perf_counter()
    preview = st.preview(color="never")
    print(f"\nAutomation API preview of {N} workloads: {time.perf_counter() - t:.1f} s, {preview.change_summary}")
    # each workload: its component and its placement; its ConfigGroup comes with a decision that
    # starts at once, which a preview of new workloads cannot know (greenops.placing.declared)
    assert preview.change_summary.get("create", 0) >= 2 * N, preview.change_summary


def test_the_cli_previews_1000_workloads_from_files_in_bounded_memory(project):
    automation.stack("scale", work_dir=project, env=env_of(project))  # the stack exists
    peak = {"rss": 0}
    proc = subprocess.Popen(
        [
            str(TOOLS_BIN / "pulumi"),
            "preview",
            "--stack",
            "scale",
            "--non-interactive",
            "--color",
            "never",
            "--cwd",
            str(project),
        ],
        env=pulumi_env({**automation.checkpoint_env(), **env_of(project)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    done = threading.Event()

    def sample() -> None:
        cli = psutil.Process(proc.pid)
        while not done.wait(0.2):
            try:
                peak["rss"] = max(peak["rss"], cli.memory_info().rss)
            except psutil.Error:
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t = time.perf_counter()
    out, _ = proc.communicate(timeout=600)
    done.set()
    sampler.join()
    print(
        f"\npulumi preview (CLI) of {N} workloads: {time.perf_counter() - t:.1f} s, peak CLI RSS "
        f"{peak['rss'] / 2**20:.0f} MB"
    )
    assert proc.returncode == 0, out[-4000:]
    assert "Argument list too long" not in out
    creates = int(out.split(" to create")[0].rsplit("+", 1)[1].strip())
    assert creates >= 2 * N, out[-2000:]
    assert 0 < peak["rss"] < CLI_MEMORY_LIMIT
