"""A run's cloud-config, played here as cloud-init would play it on the VM: its paths moved into a
scratch directory, its files written with their permissions, its one runcmd returned to run."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def moved(text: str, scratch: Path) -> str:
    """``text`` with the VM's paths (/var/lib/greenops, /var/log) in ``scratch`` instead."""
    return text.replace("/var/lib/greenops", str(scratch)).replace("/var/log", str(scratch))


def written(user_data: str, scratch: Path) -> list[str]:
    """Write the cloud-config's files into ``scratch`` (their contents' paths moved too); its runcmd."""
    config = yaml.safe_load(moved(user_data, scratch))
    for item in config["write_files"]:
        path = Path(item["path"])
        path.write_text(moved(base64.b64decode(item["content"]).decode(), scratch))
        path.chmod(int(item["permissions"], 8))
    [command] = config["runcmd"]
    return list(command)
