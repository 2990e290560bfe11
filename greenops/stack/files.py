"""Stack files (``stacks/Pulumi.<stack>.yaml``) that the command line reads itself, outside the
Pulumi engine: to render, to list placements, to write shard stacks. Read with the shared YAML
loader, and checked for the shape Pulumi gives them, so a file of the wrong shape is one line
naming it rather than a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from greenops.common.errors import GreenOpsError, quote
from greenops.common.user_yaml import load_yaml_file


class StackFileError(GreenOpsError):
    """A stack file of the wrong shape; the message names the file and what is wrong."""


def read_stack_file(path: Path, project: Path) -> dict[str, Any]:
    """The settings in ``path`` (a mapping whose ``config`` maps ``namespace:key`` to values);
    ``project`` is the folder errors name the file relative to."""
    label = _label(path, project)
    settings = load_yaml_file(path, label)
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise StackFileError(f"{label}: the top level must be a mapping (config: ...), got {type(settings).__name__}")
    config = settings.get("config")
    if config is not None and not isinstance(config, dict):
        raise StackFileError(
            f"{label}: config must be a mapping of namespace:key to values, got {type(config).__name__}"
        )
    for key in config or {}:
        if not isinstance(key, str) or ":" not in key:
            raise StackFileError(f"{label}: config: key {quote(key)} is not a namespace:key string")
    return settings


def greenops_config(settings: dict[str, Any]) -> dict[str, Any]:
    """The ``greenops:*`` settings of a stack file, without the namespace."""
    return {k.split(":", 1)[1]: v for k, v in (settings.get("config") or {}).items() if k.startswith("greenops:")}


def _label(path: Path, project: Path) -> str:
    try:
        return str(path.relative_to(project))
    except ValueError:
        return path.name
