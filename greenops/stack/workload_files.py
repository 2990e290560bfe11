"""``greenops:workloadsFrom``: workloads declared in YAML files beside the project, not in the stack
config. A thousand workloads are ~200 KB of JSON, and stack config reaches the program through
the language host's arguments and environment, where Linux caps one string at 128 KiB. Files are
read by the program itself, so nothing large travels on a command line.

Each entry is a file or a folder (every ``*.yaml``/``*.yml`` under it, in sorted order), relative
to the project's root. A file holds one workload (a mapping with ``name``), a list of workloads, or
``{tenant: <t>, workloads: [...]}``, where the tenant is the default for the file's workloads (a
file per tenant).

A workload's ``run`` may name its script as a file, ``run: {scriptFile: scripts/etl.sh}``, relative
to the workload file's folder; it is read here, bounded, and the workload carries it as
``run.script`` from then on (the one form the contract knows).

The stack config is written by a tenant, and the program runs with the platform's rights: only
files inside the project are read (after symbolic links are followed), each through the shared
YAML loader (greenops/common/user_yaml.py), and a stack holds at most MAX_WORKLOADS workloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenops.common.errors import GreenOpsError, quote, shown
from greenops.common.user_yaml import UserYamlError, load_yaml_file
from greenops.models.contract import MAX_SCRIPT_CHARS

SETTING = "greenops:workloadsFrom"
# The scheduler books at most this many jobs in one request, and `greenops --shards` splits a stack
# into at most this many: past it a stack is split, not grown. Counting stops at the first one too
# many, so a stack of a million costs what 10 000 cost.
MAX_WORKLOADS = 10_000
# A script file is read up to this: the contract's characters, at most 4 bytes each in UTF-8. The
# model then counts its characters.
MAX_SCRIPT_BYTES = 4 * MAX_SCRIPT_CHARS


class WorkloadFileError(GreenOpsError):
    """A workloads file that cannot be read; the message names the file and the reason."""


@dataclass(frozen=True)
class Declared:
    where: str  # "workloads/media.yaml[2]": the place a named error points at
    spec: Any


def workload_files(entries: list[str], root: Path) -> list[Path]:
    """The files the entries name, each resolved and inside ``root``."""
    base = root.resolve()
    files: list[Path] = []
    for entry in entries:
        try:
            files += _files_of(entry, base, root)
        # a NUL byte, a name too long, a loop of links (OSError, or RuntimeError from resolve())
        except (OSError, ValueError, RuntimeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise WorkloadFileError(f"{SETTING}: {shown(entry)}: not a usable path ({reason})") from None
        if len(files) > MAX_WORKLOADS:  # a file holds one workload or more
            raise WorkloadFileError(f"{SETTING}: more than {MAX_WORKLOADS} files: split them over stacks")
    return files


def _files_of(entry: str, base: Path, root: Path) -> list[Path]:
    path = _inside(entry, base)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        if not found:
            raise WorkloadFileError(f"{SETTING}: {shown(entry)}: no *.yaml file in this folder")
        for file in found:
            if not file.resolve().is_relative_to(base):
                raise WorkloadFileError(
                    f"{SETTING}: {_label(file, base)}: a symbolic link to outside the project folder; "
                    "only files inside the project are read"
                )
        return [f.resolve() for f in found]
    if path.is_file():
        return [path]
    raise WorkloadFileError(f"{SETTING}: {shown(entry)}: no such file or folder under {root}")


def _inside(entry: str, base: Path) -> Path:
    """``entry`` resolved against the project; refused, naming why, when it leaves the project."""
    given = Path(entry)
    path = (base / given).resolve()
    if path.is_relative_to(base):
        return path
    if given.is_absolute():
        reason = "an absolute path outside the project folder"
    elif ".." in given.parts:
        reason = "a path through '..' to outside the project folder"
    else:
        reason = "a symbolic link to outside the project folder"
    raise WorkloadFileError(
        f"{SETTING}: {shown(entry)}: {reason}; name files or folders inside the project, relative to it"
    )


def read_workloads(entries: list[str], root: Path, already: int = 0) -> list[Declared]:
    """Every workload the files declare, each with where it was declared; not yet validated.
    ``already`` workloads are declared elsewhere (greenops:workloads) and count to MAX_WORKLOADS."""
    out: list[Declared] = []
    for path in workload_files(entries, root):
        label = _label(path, root.resolve())
        try:
            doc = load_yaml_file(path, label)
        except UserYamlError as exc:
            raise WorkloadFileError(str(exc)) from None
        out += [_with_script(d, path.parent, root.resolve()) for d in _items(doc, label)]
        if already + len(out) > MAX_WORKLOADS:
            raise WorkloadFileError(
                f"{SETTING}: more than {MAX_WORKLOADS} workloads ({out[MAX_WORKLOADS - already].where} is one "
                "too many): split them over stacks (greenops --shards)"
            )
    return out


def _items(doc: Any, label: str) -> list[Declared]:
    if doc is None:
        return []
    if isinstance(doc, dict) and "workloads" in doc:
        extra = sorted(quote(k) for k in set(doc) - {"tenant", "workloads"})
        if extra:
            shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
            raise WorkloadFileError(f"{label}: unknown key(s) [{shown}] beside workloads (only tenant may go there)")
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


def _with_script(declared: Declared, folder: Path, base: Path) -> Declared:
    """The workload with its ``run.scriptFile`` read into ``run.script``; as it is without one."""
    spec = declared.spec
    run = spec.get("run") if isinstance(spec, dict) else None
    if not isinstance(run, dict) or "scriptFile" not in run:
        return declared
    where = f"{declared.where}: run.scriptFile"
    named = run["scriptFile"]
    if not isinstance(named, str) or not named or "script" in run:
        raise WorkloadFileError(f"{where}: a path to one script file, instead of run.script (not beside it)")
    path = (folder / named).resolve()
    if not path.is_relative_to(base):
        raise WorkloadFileError(f"{where}: {shown(named)} leaves the project folder; only files inside it are read")
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise WorkloadFileError(f"{where}: {shown(named)}: {exc.strerror or exc}") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise WorkloadFileError(
            f"{where}: {shown(named)} is longer than a script may be ({MAX_SCRIPT_CHARS} characters)"
        )
    try:
        script = data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkloadFileError(f"{where}: {shown(named)} is not UTF-8 text") from None
    rest = {k: v for k, v in run.items() if k != "scriptFile"}
    return Declared(declared.where, {**spec, "run": {**rest, "script": script}})


def _label(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return path.name
