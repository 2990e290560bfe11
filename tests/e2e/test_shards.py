"""`greenops up --shards` as a user runs it: one base stack, its workloads in files, three shard
stacks through the real engine, two at a time; a shard whose workload policy refuses fails alone,
named with its error, and the others' placements make one table."""

from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from greenops.common.shard_names import shard_of
from greenops.common.toolpaths import REPO
from tests.support import loopback
from tests.support.engine import iso, project_with_stack, render_mode_config, require_engine

pytestmark = [pytest.mark.tools, pytest.mark.integration]
SHARDS = 3


def test_up_across_shards_reports_the_failing_one_and_tables_the_rest(tmp_path):
    require_engine()
    deadline = iso(datetime.now(UTC) + timedelta(days=1))
    good = [f"job-{i}" for i in range(9)]
    refused = "too-far"  # 10 ms from westus with EU residency: policy refuses it
    with loopback.servers() as (scheduler, opa):
        project = project_with_stack(
            tmp_path / "project",
            "batch",
            render_mode_config(opa.url, scheduler.url, tmp_path / "rendered", workloadsFrom="workloads"),
        )
        (project / "workloads").mkdir()
        (project / "workloads" / "ops.yaml").write_text(
            yaml.safe_dump(
                {
                    "tenant": "ops",
                    "workloads": [
                        {
                            "name": n,
                            "cpu": 2,
                            "memory": 4,
                            "duration": "1h",
                            "deadline": deadline,
                            "originRegion": "westeurope",
                        }
                        for n in good
                    ]
                    + [
                        {
                            "name": refused,
                            "cpu": 2,
                            "memory": 4,
                            "duration": "1h",
                            "deadline": deadline,
                            "originRegion": "westus",
                            "maxLatency": 10,
                            "dataResidency": "eu",
                        }
                    ],
                }
            )
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GREENOPS_"))}
        env.update(
            {
                "GREENOPS_PROJECT_DIR": str(project),
                "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
                "PULUMI_CONFIG_PASSPHRASE": "shards",
                # the ambient credentials, as a CI step's secrets: every shard's Placements present them
                "GREENOPS_SCHEDULER_TOKEN": loopback.tenant_tokens(scheduler, ["ops"])["ops"],
                "GREENOPS_OPA_TOKEN": opa.query_token,
            }
        )
        (tmp_path / "state").mkdir()
        greenops = str(REPO / ".venv" / "bin" / "greenops")
        up = subprocess.run(
            [greenops, "up", "--stack", "batch", "--shards", str(SHARDS), "--concurrency", "2"],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        out = up.stdout + up.stderr
        failing = shard_of(refused, SHARDS)
        assert up.returncode == 1, out
        failed = out.split(f"batch-shard-{failing}", 1)[1].split("\nbatch-shard-")[0].split("\nup batch")[0]
        assert (
            failed.lstrip().startswith("FAILED") and f"workload '{refused}' was not placed: policy refused it" in failed
        ), out
        assert f"up batch: {SHARDS - 1} of {SHARDS} shard(s) ok" in out and f"failed: batch-shard-{failing}" in out, out
        for i in set(range(SHARDS)) - {failing}:
            assert re.search(rf"^batch-shard-{i}\s+ok\s", out, re.MULTILINE), out
        table = out.split("shard(s) ok", 1)[1]
        placed_ok = {n for n in good if shard_of(n, SHARDS) != failing}
        assert placed_ok and all(n in table for n in placed_ok), out
        assert refused not in table, out
        assert sorted((project / "stacks").glob("Pulumi.batch-shard-*.yaml")) == [
            project / "stacks" / f"Pulumi.batch-shard-{i}.yaml" for i in range(SHARDS)
        ]
        down = subprocess.run(
            [greenops, "destroy", "--stack", "batch", "--shards", str(SHARDS)],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert down.returncode == 0 and f"destroy batch: {SHARDS} of {SHARDS} shard(s) ok" in down.stdout, (
            down.stdout + down.stderr
        )
