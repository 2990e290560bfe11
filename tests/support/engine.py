"""Helpers for tests that drive the real Pulumi engine against OPA and the scheduler on loopback."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from greenops.common.clock import stamp, system_clock
from greenops.common.toolpaths import REPO
from greenops.engine import automation
from tests.support.common import AZURE_SUBSCRIPTION, require_tool
from tests.support.common import SSH_KEY as KEY

ENGINE_TOOLS = ("pulumi", "opa", "pulumi-resource-kubernetes", "pulumi-resource-pulumi-python")


def iso(t: datetime) -> str:
    return stamp(t)


def at(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def unchanged(summary) -> bool:
    """Nothing to do: every resource the same. A stack's read of its own outputs (the previous
    pass's rows, greenops.stack.program.PreviousPass) is not a change."""
    return set(summary or {}) - {"read"} == {"same"}


def require_engine() -> None:
    for tool in ENGINE_TOOLS:
        require_tool(tool)


def render_mode_config(opa_url: str, scheduler_url: str, render_dir: Path, **sections) -> dict:
    """``greenops:*`` config of a render-mode stack pointed at the loopback servers."""
    endpoints = {"opaUrl": opa_url, "schedulerUrl": scheduler_url, **sections.pop("endpoints", {})}
    return {
        "endpoints": endpoints,
        "kubernetes": {"mode": "render", "renderDir": str(render_dir)},
        "render": {"sshPublicKey": KEY, "skipAwait": True, "azureSubscriptionId": AZURE_SUBSCRIPTION},
        **sections,
    }


def small_job(name: str, deadline: str, tenant: str = "ops", **fields) -> dict:
    """A declared workload of 2 vCPU and 4 GiB for 1 h from West Europe; ``fields`` add or change any."""
    return {
        "name": name,
        "cpu": 2,
        "memory": 4,
        "duration": "1h",
        "deadline": deadline,
        "originRegion": "westeurope",
        "tenant": tenant,
        **fields,
    }


# GCP regions of Europe whose embedded profile changes over the day (most are flat, and a flat
# profile's best run is at once), cleanest at different hours (Paris at 03:00-05:00 UTC in December,
# Frankfurt at 23:00): patient_job tries them in this order
PATIENT_REGIONS = ("europe-west9", "europe-west3")


def patient_job(now: datetime) -> dict:
    """Pinned to one GCP region with a deadline days away: a job the scheduler starts later. The
    region is the first of PATIENT_REGIONS whose best run on the embedded profiles starts more than an
    hour from ``now``: within a zone's cleanest hour of the day, starting at once is the best run (in
    Paris in December, 03:00 to 04:00 UTC), and the job would not wait."""
    deadline = now + timedelta(days=5)
    return {
        "name": "patient",
        "cpu": 4,
        "memory": 8,
        "duration": "1h",
        "deadline": iso(deadline),
        "originRegion": "italynorth",
        "eligibleProviders": ["gcp"],
        "region": _waiting_region(now, deadline),
        "tenant": "ml",
    }


def _waiting_region(now: datetime, deadline: datetime) -> str:
    from greenops.catalog import load_catalog
    from greenops.intensity.profiles import ProfileSource
    from greenops.search.algorithm import Job, best_placement

    zones = {r.name: r.zone for r in load_catalog().regions() if r.provider == "gcp"}
    source, t0, t1 = ProfileSource(), now.timestamp(), deadline.timestamp()
    for region in PATIENT_REGIONS:
        zone = str(zones[region])
        best = best_placement({zone: source.series(zone, t0, t1, t0)}, Job(4, 8, 3600.0), t0, t1)
        if best.start > t0 + 3600.0:
            return region
    raise AssertionError(f"every one of {PATIENT_REGIONS} is at its cleanest hour at {iso(now)}")


def engine_stack(tmp_path: Path, name: str, now: datetime, config: dict, secrets: dict[str, str] | None = None):
    """An inline-program stack on a file backend in ``tmp_path``, its clock at ``now``; ``secrets``:
    secret ``greenops:*`` config (tests.support.loopback.stack_secrets: the credentials Placement presents)."""
    require_engine()
    from pulumi import automation as auto

    from greenops.stack import program

    (tmp_path / "state").mkdir()
    env = {"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "GREENOPS_NOW": iso(now)}
    made = []

    def run_program() -> None:
        # the stack's own outputs are its record (as for `pulumi up`); the pass's clock is the stack's
        program.run(now=system_clock(made[0].workspace.env_vars))

    stack = automation.inline_stack(name, run_program, tmp_path, env)
    made.append(stack)
    stack.set_all_config({f"greenops:{k}": auto.ConfigValue(json.dumps(v)) for k, v in config.items()})
    if secrets:
        from tests.support.loopback import set_secrets

        set_secrets(stack, secrets)
    return stack


def cli_env(project: Path, stack_env: dict[str, str]) -> dict[str, str]:
    """The environment a `greenops` process of ``project`` runs with, as a user's shell would give
    it: this one's without any PULUMI_ or GREENOPS_ setting, then the project and the stack's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GREENOPS_"))}
    return {**env, "GREENOPS_PROJECT_DIR": str(project), **stack_env}


def write_stack(folder: Path, name: str, config: dict) -> None:
    """``folder``/stacks/Pulumi.<name>.yaml, the only stack file there, with ``config`` as ``greenops:*``."""
    (folder / "stacks").mkdir(parents=True)
    (folder / "stacks" / f"Pulumi.{name}.yaml").write_text(
        yaml.safe_dump({"config": {f"greenops:{k}": v for k, v in config.items()}})
    )


def project_with_stack(folder: Path, name: str, config: dict) -> Path:
    """A copy of the Pulumi project whose stacks/ holds only ``name`` with ``config``."""
    write_stack(folder, name, config)
    shutil.copy2(REPO / "Pulumi.yaml", folder / "Pulumi.yaml")
    return folder


def project_beside_the_repo(folder: Path, name: str, config: dict) -> Path:
    """A project folder outside the repository whose Pulumi.yaml runs the repository's program (in
    its .venv), its stacks/ holding only ``name`` with ``config``: what the `pulumi` CLI runs there."""
    write_stack(folder, name, config)
    (folder / "Pulumi.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "greenops-platform",
                "main": str(REPO),
                "stackConfigDir": "stacks",
                "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(REPO / ".venv")}},
            }
        )
    )
    return folder


def set_project_secrets(project: Path, name: str, env: dict[str, str], secrets: dict[str, str]) -> None:
    """``pulumi config set --secret greenops:<key>`` for each of ``secrets`` (tests.support.loopback.stack_secrets)
    on stack ``name`` of ``project``, encrypted with the passphrase ``env`` gives (PULUMI_CONFIG_PASSPHRASE)
    on the backend it names, as an operator sets them once; the stack is created when new."""
    from tests.support.loopback import set_secrets

    keep = ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE")
    set_secrets(automation.stack(name, work_dir=project, env={k: env[k] for k in keep if k in env}), secrets)


def rendered_workloads(folder: Path) -> set[str]:
    """The workloads whose objects the render-mode provider has written."""
    names = set()
    for f in (folder / "1-manifest").glob("*.yaml") if (folder / "1-manifest").exists() else []:
        for line in f.read_text().splitlines():
            # (GCP's labels allow no dots or slashes: Config Connector objects carry greenops-workload)
            if line.strip().startswith(("greenops.io/workload:", "greenops-workload:")):
                names.add(line.split(":", 1)[1].strip())
    return names


def outcome_of(run: Callable[[], object]) -> object:
    """What ``run`` returned, the StackLocked message, or any other exception (handed to the test)."""
    try:
        return run()
    except automation.StackLocked as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - handed to the test, which asserts on it
        return exc


def in_threads(target: Callable[[], None], times: int) -> None:
    """``target`` in ``times`` threads started together; returns when all have ended."""
    threads = [threading.Thread(target=target) for _ in range(times)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def at_once(run: Callable[[], object], times: int = 2) -> list:
    """Start ``run`` in ``times`` threads together: each outcome (outcome_of), so a caller sees
    every run's fate; none is lost in a thread."""
    outcomes: list = []
    in_threads(lambda: outcomes.append(outcome_of(run)), times)
    return outcomes


def contend(run: Callable[[], object], workers: int, runs: int, again: Callable[[object], bool]) -> list:
    """``runs`` jobs, each calling ``run`` until an outcome is not ``again``'s (a refusal: tried
    again after a pause of up to 0.2 s), done by ``workers`` threads back to back; every attempt's
    outcome (outcome_of)."""
    attempts: list = []
    left = iter(range(runs))
    mutex = threading.Lock()
    pause = random.Random(runs)

    def work() -> None:
        while True:
            with mutex:
                if next(left, None) is None:
                    return
            while again(outcome := outcome_of(run)):
                attempts.append(outcome)
                time.sleep(pause.uniform(0, 0.2))
            attempts.append(outcome)

    in_threads(work, workers)
    return attempts
