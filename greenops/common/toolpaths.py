"""Where the project's pinned Go tools live (see tools/install.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from greenops.common.errors import GreenOpsError

REPO = Path(__file__).resolve().parents[2]
TOOLS_BIN = REPO / ".tools" / "bin"


class ToolMissing(GreenOpsError):
    """A pinned tool has not been built yet."""


def tool_path(name: str) -> str:
    """``.tools/bin/<name>``, else the same name on PATH; a clear error when neither exists."""
    local = TOOLS_BIN / name
    if local.exists() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which(name)
    if found:
        return found
    raise ToolMissing(f"{name} is not built: run tools/install.sh (it builds the pinned Go tools into .tools/bin)")


@cache
def _env_sh() -> dict[str, str]:
    """Variables tools/env.sh exports: that script is the one place they are defined."""
    out = subprocess.run(
        ["bash", "-c", 'source "$1" && env -0', "env.sh", str(REPO / "tools" / "env.sh")],
        capture_output=True,
        check=True,
    ).stdout
    pairs = (item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
    return dict(pairs)


def pulumi_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The full environment for Pulumi subprocesses and the Automation API (tools/env.sh + extra)."""
    env = dict(_env_sh())
    env.update(extra or {})
    return env


MLSERVER_VENV = REPO / ".venv-mlserver"


def mlserver_path() -> str:
    """MLServer lives in its own virtualenv (``make mlserver``): it pins a FastAPI older than the
    scheduler's, exactly as its KServe runtime image is separate from everything else."""
    override = os.environ.get("GREENOPS_MLSERVER")
    if override:
        return override
    local = MLSERVER_VENV / "bin" / "mlserver"
    if local.exists():
        return str(local)
    raise ToolMissing(
        "MLServer is not installed: run make mlserver (it creates .venv-mlserver from tools/mlserver/requirements.txt)"
    )


CHECKOV_VENV = REPO / ".venv-checkov"


def checkov_path() -> str:
    """checkov lives in its own virtualenv (``make scanner``), away from the project's pins."""
    local = CHECKOV_VENV / "bin" / "checkov"
    if local.exists():
        return str(local)
    found = shutil.which("checkov")
    if found:
        return found
    raise ToolMissing(
        "checkov is not installed: run make scanner (it creates .venv-checkov from tools/checkov/requirements.txt)"
    )
