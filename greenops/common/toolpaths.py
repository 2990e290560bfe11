"""Where the project's pinned Go tools live (see tools/install.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from greenops.common.errors import GreenOpsError
from greenops.common.file_backend import without_sidecars

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


# greenops' own Pulumi home: tools/env.sh's default when the caller sets no PULUMI_HOME.
OWN_PULUMI_HOME = REPO / ".pulumi" / "home"
AUTOMATIC_LOG_OFF = (
    "The pulumi CLI writes its automatic debug log in a folder here named logs; this file in its place "
    "turns it off in greenops' own Pulumi home. Set GREENOPS_PULUMI_LOGS=on to keep the log.\n"
)


def pulumi_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The full environment for Pulumi subprocesses and the Automation API (tools/env.sh + extra).
    A file backend's URL gets ``metadata=skip`` unless it sets ``metadata`` itself, so no run of
    greenops writes a sidecar a concurrent read can find half-written (greenops/common/file_backend.py).
    In greenops' own Pulumi home the CLI's automatic log is off unless GREENOPS_PULUMI_LOGS=on
    (without_automatic_log); a home the caller chose is left as it is."""
    env = dict(_env_sh())
    env.update(extra or {})
    url = without_sidecars(env.get("PULUMI_BACKEND_URL"))
    if url:
        env["PULUMI_BACKEND_URL"] = url
    if env.get("PULUMI_HOME") == str(OWN_PULUMI_HOME):
        if env.get("GREENOPS_PULUMI_LOGS") == "on":
            with_automatic_log(OWN_PULUMI_HOME)
        else:
            without_automatic_log(OWN_PULUMI_HOME)
    return env


def without_automatic_log(home: Path) -> None:
    """The pulumi CLI (3.259, and 3.274 too) writes the engine's debug log, compressed and
    encrypted, to ``<home>/logs`` on every command, with no setting to turn it off: at 1000
    workloads a third of an unchanged preview's time and ~400 MB of the CLI's memory. It goes on
    without the log when that folder cannot be created, so a file takes its place. Logs written
    before are kept, in ``logs.kept``."""
    logs = home / "logs"
    if logs.is_dir():
        try:
            logs.rename(home / "logs.kept")
        except OSError:
            return  # another run moved it first, or logs.kept exists: the log stays on, nothing lost
    try:
        home.mkdir(parents=True, exist_ok=True)
        with open(logs, "x", encoding="utf-8") as marker:
            marker.write(AUTOMATIC_LOG_OFF)
    except FileExistsError:
        pass  # another run put it there


def with_automatic_log(home: Path) -> None:
    """Undo without_automatic_log: the marker file goes, so the CLI can make its folder again."""
    marker = home / "logs"
    if marker.is_file() and marker.read_text(encoding="utf-8") == AUTOMATIC_LOG_OFF:
        marker.unlink(missing_ok=True)


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
