"""A stack created while the provider was still called GreenVm keeps working after the rename to
Placement: nothing is replaced or updated, and the placement can still be deleted.

Pulumi records a dynamic resource's provider in its state as a pickle naming the class by import
path, and uses that recorded provider, not today's, to delete the resource. The test rewrites a
fresh stack's state to hold the provider exactly as the code before the rename serialised it."""

from __future__ import annotations

import base64
import pickle
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from greenops.provider.placement import PlacementProvider
from tests.support import loopback
from tests.support.engine import engine_stack, iso, render_mode_config, small_job, unchanged

pytestmark = [pytest.mark.tools, pytest.mark.integration]

# serialize_provider(GreenVmProvider()) from greenops.provider.greenvm, as recorded before the rename
RECORDED_BEFORE_RENAME = (
    "gASVQgAAAAAAAACMGWdyZWVub3BzLnByb3ZpZGVyLmdyZWVudm2UjA9HcmVlblZtUHJvdmlkZXKUk5QpgZR9lIwGX2Nsb2NrlE5zYi4="
)
DYNAMIC = "pulumi-python:dynamic:Resource"


def test_the_recorded_provider_still_resolves():
    provider = pickle.loads(base64.b64decode(RECORDED_BEFORE_RENAME))
    assert isinstance(provider, PlacementProvider)


def _with_recorded_provider(deployment: dict) -> int:
    """Point every placement's recorded provider at the pre-rename one; returns how many."""
    count = 0
    for resource in deployment["resources"]:
        if resource["type"] != DYNAMIC:
            continue
        for section in ("inputs", "outputs"):
            assert "__provider" in resource[section], resource[section].keys()
            resource[section]["__provider"] = RECORDED_BEFORE_RENAME
        count += 1
    return count


def test_stack_from_before_the_rename_is_not_replaced(tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    out = tmp_path / "rendered"
    workload = small_job("nightly", iso(now + timedelta(hours=1, minutes=2)), dataResidency="eu")  # no slack: runs now
    with loopback.servers() as (scheduler, opa):
        config = render_mode_config(
            opa.url, scheduler.url, out, workloads=[workload], endpoints={"provisioningLeadSeconds": 300}
        )
        secrets = loopback.stack_secrets(scheduler, opa, loopback.tenants_of([workload]))
        stack = engine_stack(tmp_path, "renamed", now, config, secrets)
        try:
            up = stack.up()
            urns_before = {r["urn"] for r in stack.export_stack().deployment["resources"]}
            assert up.outputs["placements"].value[0]["phase"] == "Running"

            exported = stack.export_stack()
            assert _with_recorded_provider(exported.deployment) == 1
            stack.import_stack(exported)

            preview = stack.preview(diff=True)
            assert unchanged(preview.change_summary), preview.change_summary
            state = stack.export_stack().deployment["resources"]
            assert {r["urn"] for r in state} == urns_before
            assert [r["outputs"]["__provider"] for r in state if r["type"] == DYNAMIC] == [RECORDED_BEFORE_RENAME]
        finally:
            # delete runs the provider the state recorded (here the pre-rename one), not today's
            stack.destroy()
            remaining = stack.export_stack().deployment.get("resources") or []
            stack.workspace.remove_stack("renamed")
        assert remaining == []
        records = httpx.get(
            f"{scheduler.url}/reservations", params={"all": True}, headers=scheduler.admin_headers
        ).json()["reservations"]
        assert [r["phase"] for r in records] == ["Released"]  # deleted while running: capacity given back
