"""What every derivation shares: reading the raw inputs, the schema version, and the one way a
document reaches ``data/`` (validated against its model, serialised deterministically, written
only once every document is valid)."""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ValidationError

from greenops.catalog.schema import SCHEMA_VERSION  # the version the catalog reads
from greenops.common.errors import field_errors, field_path

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = [
    "PROVIDERS",
    "SCHEMA_VERSION",
    "DataFile",
    "DataFileError",
    "load_json",
    "load_yaml",
    "read_csv",
    "region_names",
    "round_",
    "sort_matrix",
    "write_catalog",
]

PROVIDERS = ("azure", "gcp", "aws")


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------
def load_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def load_yaml(path: Path) -> Any:
    # The C loader parses the 4 MB GCP price list and the CRDs in a fraction of the pure-Python time; both
    # build the same objects, so the output does not depend on which one is installed.
    with path.open(encoding="utf-8") as fh:
        return yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def round_(x: float, nd: int = 1) -> float:
    # float() so that a numpy scalar never reaches json.dumps
    return float(round(x, nd))


def region_names(regions: list[dict], provider: str) -> set[str]:
    """Names of one provider's derived regions: every other file keeps only facts about these."""
    return {r["name"] for r in regions if r["provider"] == provider}


def sort_matrix(m: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    # Sources list pairs in their own order; sorting both levels keeps re-derivations diff-free.
    return {s: {d: m[s][d] for d in sorted(m[s])} for s in sorted(m)}


# ---------------------------------------------------------------------------------------------
# Validation and output
# ---------------------------------------------------------------------------------------------
class DataFileError(Exception):
    """A derived document does not satisfy its schema: names the file, the field and the reason."""

    def __init__(self, file: str, field: str, reason: str) -> None:
        self.file, self.field, self.reason = file, field, reason
        super().__init__(f"data/{file}: {field}: {reason}")


@dataclass(frozen=True)
class DataFile:
    """One file of ``data/``: its path there and the model its document must satisfy."""

    path: str
    model: type[BaseModel]

    def render(self, doc: dict) -> str:
        """The file's exact text, after checking that text (not the dict) against the model."""
        bad = _first_non_finite(doc)
        if bad is not None:
            raise DataFileError(self.path, bad, "NaN or infinite number, which JSON cannot hold")
        if doc.get("schemaVersion") != SCHEMA_VERSION:
            raise DataFileError(
                self.path, "schemaVersion", f"must be {SCHEMA_VERSION} (got {doc.get('schemaVersion')!r})"
            )
        # indent=1 and insertion order (the order each module builds) keep the files small and
        # byte-stable; ensure_ascii=False keeps names such as "Québec" readable in diffs.
        text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        try:
            # Strict and from the JSON text: what is checked is exactly what the catalog will read,
            # with no lax coercion (a "3" is not accepted where a number is due).
            self.model.model_validate_json(text, strict=True)
        except ValidationError as exc:
            errors = exc.errors()
            field, reason = field_errors(errors[:1], _with_input)[0]
            if len(errors) > 1:
                reason += f" (and {len(errors) - 1} more)"
            raise DataFileError(self.path, field or "(document)", reason) from None
        return text


def write_catalog(out: Path, docs: Mapping[DataFile, dict]) -> list[Path]:
    """Validate every document, then write them all; on an invalid one, raise before writing any.

    Each file is written beside its target and renamed over it, so a crash mid-write cannot leave
    a truncated file where the catalog reads.
    """
    texts = {f: f.render(doc) for f, doc in docs.items()}
    written = []
    for f, text in texts.items():
        path = out / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            tmp.write_bytes(text.encode("utf-8"))  # bytes: no newline translation on any platform
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        written.append(path)
    return written


def _with_input(error: ErrorDetails) -> str | None:
    """Pydantic's message with the offending value, when it is a plain one."""
    if error["type"] != "missing" and isinstance(error.get("input"), str | int | float | bool | None):
        return f"{error['msg']} (got {error['input']!r})"
    return None


def _first_non_finite(value: Any, loc: tuple[int | str, ...] = ()) -> str | None:
    # json.dumps(allow_nan=False) only says "out of range": find which field holds the NaN (a
    # pandas mean over an empty series is the usual cause) so the error can name it.
    if isinstance(value, float) and not math.isfinite(value):
        return field_path(loc) or "(document)"
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found = _first_non_finite(child, (*loc, key))
        if found is not None:
            return found
    return None
