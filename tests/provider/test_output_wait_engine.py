"""greenops.common.pulumi_outputs under the real engine: a program with hundreds of Outputs and the cheap wait
finishes with every value, and an error raised in an apply still fails the run, promptly."""

from __future__ import annotations

import time
from pathlib import Path

import pulumi
import pytest
from pulumi import automation as auto

from greenops.common.pulumi_outputs import gather, sdk_waits_cheaply
from greenops.engine import automation
from tests.support.engine import require_engine

PARTS = 200  # each with a few Outputs: far more pending than the cheap wait's few


def _program(fail_in_apply: bool):
    def program() -> None:
        sdk_waits_cheaply()
        parts = []
        for i in range(PARTS):
            part = pulumi.ComponentResource("greenopstest:index:Part", f"part-{i}")
            part.register_outputs({"index": i})
            parts.append(part)
        names = gather(*[p.urn.apply(lambda urn: urn.rsplit("::", 1)[-1]) for p in parts])
        if fail_in_apply:
            parts[-1].urn.apply(_refuse)
        pulumi.export("names", names)

    return program


def _refuse(urn: str) -> None:
    raise ValueError(f"refused in an apply: {urn.rsplit('::', 1)[-1]}")


def _stack(tmp_path: Path, name: str, fail_in_apply: bool) -> auto.Stack:
    require_engine()
    (tmp_path / "state").mkdir(exist_ok=True)
    env = {"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_CONFIG_PASSPHRASE": "test"}
    return automation.inline_stack(name, _program(fail_in_apply), tmp_path, env, project="greenops-wait")


def test_every_value_arrives(tmp_path):
    result = _stack(tmp_path, "ok", fail_in_apply=False).up(color="never")
    assert result.outputs["names"].value == [f"part-{i}" for i in range(PARTS)]


def test_an_error_in_an_apply_still_fails_the_run_promptly(tmp_path):
    stack = _stack(tmp_path, "fails", fail_in_apply=True)
    started = time.monotonic()
    with pytest.raises(auto.CommandError) as failed:
        stack.up(color="never")
    assert f"refused in an apply: part-{PARTS - 1}" in str(failed.value)
    assert time.monotonic() - started < 120
