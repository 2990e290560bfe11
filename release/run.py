"""Running the release's tools: one error type, whose message names the step and the tool's own words."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
TOOLS_BIN = PROJECT / ".tools" / "bin"


Arg = str | os.PathLike[str]  # one word of a command line


class ReleaseError(Exception):
    """A release step failed: the message says which, and why."""


def tool(name: str) -> str:
    """A pinned Go tool from .tools/bin (tools/install.sh), else the Debian one on PATH."""
    local = TOOLS_BIN / name
    return str(local) if local.exists() else name


def sh(
    step: str,
    argv: Sequence[Arg],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    with_stderr: bool = False,
) -> str:
    """Run ``argv``; its stdout (and stderr, for tools that report there), or a ReleaseError naming
    ``step`` with the end of its stderr."""
    args = [str(a) for a in argv]
    try:
        done = subprocess.run(
            args,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError as exc:
        raise ReleaseError(f"{step}: {args[0]} is not installed (make release installs it)") from exc
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip())[-2000:]
        raise ReleaseError(f"{step}: {' '.join(args[:3])} ... exited {done.returncode}: {said}")
    return done.stdout + (done.stderr if with_stderr else "")
