"""The facts every suite may use: where the checkout and the shared data are, the instant tests
decide at, and the pinned tools (skipped locally when not built, a failure in CI)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
# greenops:render.azureSubscriptionId of every test stack that renders Azure (the owners' ARM id needs it)
AZURE_SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"
# a region per cloud where the catalog knows the zones (and, for AWS, the AMI)
REGION_PER_CLOUD = {"aws": "eu-north-1", "gcp": "europe-west9", "azure": "swedencentral"}
# the SSH key every rendered VM is given in tests (tests/golden holds it as rendered)
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"

# where a hand-built Decision places a run, for tests about the run rather than the placement
IN_PARIS = {
    "provider": "gcp",
    "region": "europe-west9",
    "zone": "FR",
    "vm_size": "e2-standard-4",
    "image": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts",
}


def missing(reason: str) -> NoReturn:
    """A part the test needs is not installed: a skip locally, a failure in CI (which installs all)."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def require_tool(name: str) -> str:
    """Path of a pinned tool; skips locally when it is not built, fails in CI (which builds them)."""
    from greenops.common.toolpaths import ToolMissing, tool_path

    try:
        return tool_path(name)
    except ToolMissing as exc:
        missing(str(exc))


def require_mlserver() -> str:
    """MLServer's path, built by ``make mlserver``; skipped locally without it, a failure in CI."""
    from greenops.common.toolpaths import ToolMissing, mlserver_path

    try:
        return mlserver_path()
    except ToolMissing as exc:
        missing(str(exc))


def require_cloud_init() -> str:
    """Debian's cloud-init command (make cloud-init); skipped locally without it, a failure in CI."""
    import shutil

    found = shutil.which("cloud-init")
    if found:
        return found
    missing("cloud-init is not installed: make cloud-init")
