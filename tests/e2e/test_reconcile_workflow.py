"""The scheduled CI workflow, run from its own file: every `run:` step, in order, with the job's
environment, its expressions filled in as GitHub would (secrets -> a local file backend), against
a real OPA and scheduler on loopback. (`uses:` steps are GitHub's own set-up actions.)"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from greenops.common.toolpaths import REPO
from tests.support import loopback
from tests.support.engine import (
    iso,
    project_with_stack,
    render_mode_config,
    require_engine,
    set_project_secrets,
    small_job,
)

pytestmark = [pytest.mark.tools, pytest.mark.integration]
WORKFLOW = REPO / ".github" / "workflows" / "reconcile.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def secret_names(env: dict | None) -> list[str]:
    """The variables of an ``env`` block that are filled from secrets."""
    return [k for k, v in (env or {}).items() if "secrets." in str(v)]


def job() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]["reconcile"]


def test_it_is_scheduled_and_never_overlaps_itself():
    doc = yaml.safe_load(WORKFLOW.read_text())
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as True
    assert on["schedule"][0]["cron"] == "*/5 * * * *"
    assert job()["concurrency"] == {"group": "reconcile-${{ matrix.stack }}", "cancel-in-progress": False}
    assert job()["strategy"]["fail-fast"] is False


def fill(text: str, values: dict[str, str]) -> str:
    def one(m: re.Match) -> str:
        if m.group(1) not in values:
            raise AssertionError(f"the test does not know the workflow expression {m.group(0)}")
        return values[m.group(1)]

    return EXPRESSION.sub(one, text)


def test_every_run_step_reconciles_a_stack(tmp_path):
    require_engine()
    project = tmp_path / "checkout"
    now = datetime.now(UTC)
    values = {
        "matrix.stack": "ci",
        "github.workspace": str(project),
        "secrets.PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "secrets.PULUMI_CONFIG_PASSPHRASE": "ci-test",
        "secrets.PULUMI_ACCESS_TOKEN": "",
        "secrets.AWS_ACCESS_KEY_ID": "",
        "secrets.AWS_SECRET_ACCESS_KEY": "",
    }
    (tmp_path / "state").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GREENOPS_"))}
    env.update({k: fill(str(v), values) for k, v in job()["env"].items()})
    steps = [s for s in job()["steps"] if "run" in s]
    assert [s["run"] for s in steps] == [
        'make setup tools TOOLS="pulumi pulumi-kubernetes opa helm"',
        '.venv/bin/greenops reconcile --stack "$STACK"',
    ]
    # each secret only in the step that uses it: none at job or workflow level, none for the set-up
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert secret_names(workflow.get("env")) == [] and secret_names(job().get("env")) == []
    assert [secret_names(s.get("env")) for s in job()["steps"] if secret_names(s.get("env"))] == [
        [
            "PULUMI_BACKEND_URL",
            "PULUMI_ACCESS_TOKEN",
            "PULUMI_CONFIG_PASSPHRASE",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
        ]
    ]
    with loopback.servers() as (scheduler, opa):
        project_with_stack(
            project,
            "ci",
            render_mode_config(
                opa.url,
                scheduler.url,
                tmp_path / "rendered",
                workloads=[small_job("nightly", iso(now + timedelta(hours=1, minutes=2)), tenant="ci")],
            ),
        )
        # the stack's credentials are its encrypted secrets: the reconcile step's passphrase (the only
        # step given the secrets) opens them
        reconcile_env = {**env, **{k: fill(str(v), values) for k, v in (steps[-1].get("env") or {}).items()}}
        set_project_secrets(project, "ci", reconcile_env, loopback.stack_secrets(scheduler, opa, ["ci"]))
        outputs = []
        for _ in range(2):  # two scheduled runs: the first places and opens the gate, the second changes nothing
            for step in steps:
                done = subprocess.run(
                    ["bash", "-eo", "pipefail", "-c", fill(step["run"], values)],
                    cwd=REPO,
                    env={**env, **{k: fill(str(v), values) for k, v in (step.get("env") or {}).items()}},
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                assert done.returncode == 0, (
                    f"step {step.get('name', step['run'])!r} failed:\n{done.stdout}\n{done.stderr}"
                )
            outputs.append(done.stdout)
    first, second = outputs
    assert first.startswith("reconcile ci: create ")
    assert "placed    nightly: " in first and "started   nightly: running:" in first
    assert "next change: nightly: run ends at " in first
    assert "no workload changed state" in second and "same " in second
    assert (tmp_path / "state" / ".pulumi" / "stacks").exists()  # the backend from the secrets, not the checkout's
