"""Our own artifacts' pins in components/versions.yaml: ``<repository>/<name>:<tag>@sha256:<digest>``.

Only the lines of the entries named are rewritten, so the file's comments stay; the result is
validated by components.pins like any edit, and refused whole if it is not valid."""

from __future__ import annotations

import re
from pathlib import Path

from components.pins import VERSIONS_FILE, read_versions
from release.run import ReleaseError

__all__ = ["VERSIONS_FILE", "pin_line", "read_pin", "write_pins"]


def pin_line(entry: str, reference: str) -> str:
    return f'{entry}: "{reference}"'


def write_pins(pins: dict[str, str], versions: Path = VERSIONS_FILE) -> None:
    """Set each ``entry: "reference"`` of ``pins`` in ``versions``."""
    text = versions.read_text()
    for entry, reference in pins.items():
        pattern = re.compile(rf"^{re.escape(entry)}: .*$", re.MULTILINE)
        if len(pattern.findall(text)) != 1:
            raise ReleaseError(f"{versions}: expected one line '{entry}: ...', found {len(pattern.findall(text))}")
        text = pattern.sub(pin_line(entry, reference).replace("\\", "\\\\"), text)
    candidate = versions.with_suffix(".yaml.new")
    candidate.write_text(text)
    try:
        read_versions(candidate)
    except Exception as exc:
        candidate.unlink()
        raise ReleaseError(f"{versions}: the new pins are not valid: {exc}") from exc
    candidate.replace(versions)


def read_pin(entry: str, versions: Path = VERSIONS_FILE) -> str:
    value = getattr(read_versions(versions), entry)
    return str(value)
