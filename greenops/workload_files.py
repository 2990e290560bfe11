"""``greenops:workloadsFrom``: workloads declared in YAML files beside the project, not in the stack
config. A thousand workloads are ~200 KB of JSON, and stack config reaches the program through
the language host's arguments and environment, where Linux caps one string at 128 KiB. Files are
read by the program itself, so nothing large travels on a command line.

Each entry is a file or a folder (every ``*.yaml``/``*.yml`` under it, in sorted order), relative
to the project's root. A file holds one workload (a mapping with ``name``), a list of workloads, or
``{tenant: <t>, workloads: [...]}``, where the tenant is the default for the file's workloads (a
file per tenant).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from greenops.errors import GreenOpsError


class WorkloadFileError(GreenOpsError):
    """A workloads file that cannot be read; the message names the file and the reason."""


@dataclass(frozen=True)
class Declared:
    where: str  # "workloads/media.yaml[2]": the place a named error points at
    spec: Any


def workload_files(entries: list[str], root: Path) -> list[Path]:
    files: list[Path] = []
    for entry in entries:
        path = (root / entry).resolve()
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                raise WorkloadFileError(f"greenops:workloadsFrom: {entry}: no *.yaml file in this folder")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise WorkloadFileError(f"greenops:workloadsFrom: {entry}: no such file or folder under {root}")
    return files


def read_workloads(entries: list[str], root: Path) -> list[Declared]:
    """Every workload the files declare, each with where it was declared; not yet validated."""
    out: list[Declared] = []
    for path in workload_files(entries, root):
        label = _label(path, root)
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise WorkloadFileError(f"{label}: not readable as YAML: {' '.join(str(exc).split())}") from None
        out += _items(doc, label)
    return out


def _items(doc: Any, label: str) -> list[Declared]:
    if doc is None:
        return []
    if isinstance(doc, dict) and "workloads" in doc:
        extra = sorted(set(doc) - {"tenant", "workloads"})
        if extra:
            raise WorkloadFileError(f"{label}: unknown key(s) {extra} beside workloads (only tenant may go there)")
        items = doc["workloads"] or []
        if not isinstance(items, list):
            raise WorkloadFileError(f"{label}: workloads must be a list")
        tenant = doc.get("tenant")
        return [
            Declared(f"{label}[{i}]", {"tenant": tenant, **w} if tenant is not None and isinstance(w, dict) else w)
            for i, w in enumerate(items)
        ]
    if isinstance(doc, list):
        return [Declared(f"{label}[{i}]", w) for i, w in enumerate(doc)]
    if isinstance(doc, dict):
        return [Declared(label, doc)]
    raise WorkloadFileError(
        f"{label}: expected a workload, a list of workloads or {{tenant, workloads}}, got {type(doc).__name__}"
    )


def _label(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)
