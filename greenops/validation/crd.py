"""Validate rendered objects against upstream CustomResourceDefinition schemas.

The API server *prunes* fields a structural schema does not declare, silently. A typo in a
rendered manifest would then vanish instead of failing, so this validator is stricter than the
server: an undeclared field is an error unless the schema preserves unknown fields.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def default_crd_dir() -> Path:
    """``GREENOPS_CRD_DIR``, else the shared folder beside the repository checkout."""
    env = os.environ.get("GREENOPS_CRD_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "crds"


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        props = node.get("properties")
        if props is not None:
            if "additionalProperties" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
            for child in props.values():
                walk(child)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                walk(node[key])
        for key in ("allOf", "anyOf", "oneOf"):
            for child in node.get(key, []):
                walk(child)

    walk(schema)
    # metadata is validated by the API server itself, not by the CRD schema.
    schema.get("properties", {}).pop("metadata", None)
    if isinstance(schema.get("properties"), dict):
        schema["properties"]["metadata"] = {"type": "object"}
    return schema


@dataclass(frozen=True)
class _Version:
    group: str
    kind: str
    version: str
    served: bool
    validator: jsonschema.Draft7Validator


class CrdSchemas:
    """Every CRD in a folder, indexed by (apiVersion, kind)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._versions: dict[tuple[str, str], _Version] = {}
        self._raw: dict[tuple[str, str], dict[str, Any]] = {}
        for path in sorted(folder.glob("*.yaml")):
            with path.open(encoding="utf-8") as fh:
                for doc in yaml.load_all(fh, Loader=_LOADER):
                    if not doc or doc.get("kind") != "CustomResourceDefinition":
                        continue
                    self._add(doc)

    def _add(self, crd: dict[str, Any]) -> None:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            schema = v.get("schema", {}).get("openAPIV3Schema")
            if schema is None:
                continue
            key = (f"{group}/{v['name']}", kind)
            self._raw[key] = crd
            self._versions[key] = _Version(
                group,
                kind,
                v["name"],
                bool(v.get("served")),
                jsonschema.Draft7Validator(_strict(schema)),
            )

    def kinds(self) -> list[tuple[str, str]]:
        return sorted(self._versions)

    def crd_for(self, api_version: str, kind: str) -> dict[str, Any]:
        return self._raw[(api_version, kind)]

    def errors(self, obj: dict[str, Any]) -> list[str]:
        """Human-readable schema violations of one object; empty when it is valid."""
        key = (obj.get("apiVersion", ""), obj.get("kind", ""))
        name = obj.get("metadata", {}).get("name", "<unnamed>")
        version = self._versions.get(key)
        if version is None:
            return [f"{key[1]}/{name}: no CRD serves {key[0]} {key[1]}"]
        out = [] if version.served else [f"{key[1]}/{name}: {key[0]} is not served"]
        for err in sorted(version.validator.iter_errors(obj), key=lambda e: list(e.absolute_path)):
            path = ".".join(str(p) for p in err.absolute_path) or "<root>"
            out.append(f"{key[1]}/{name}: {path}: {err.message}")
        return out
