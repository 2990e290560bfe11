"""Checks resource inputs against the providers' own schemas, as far as the direct sets use them.

The subsets in ``data/provider-schemas/`` (written by scripts/derive_provider_schemas.py) are in
the Pulumi schema's shape; this turns one resource's entry into a JSON Schema (2020-12) and checks
the inputs the engine would receive for it: camelCase at every depth, as a mock's ``new_resource``
sees them. Each subset names only the properties the sets use, so an unknown name (misspelt, or
real but not in the subset yet) is rejected with its path.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from greenops.catalog.catalog import DEFAULT_DATA_DIR

SCHEMA_DIR = DEFAULT_DATA_DIR / "provider-schemas"
PROVIDER_PREFIX = "pulumi:providers:"
LOCAL_TYPE_REF = "#/types/"
# greenops' cloud name -> the Pulumi package that provisions it
PACKAGES = {"azure": "azure-native", "gcp": "gcp", "aws": "aws"}

Spec = dict[str, Any]


@cache
def load(package: str, folder: Path = SCHEMA_DIR) -> Spec:
    """The committed subset of a package's schema (``azure-native``, ``gcp`` or ``aws``)."""
    subset: Spec = json.loads((folder / f"{package}.json").read_text(encoding="utf-8"))
    return subset


def _pointer(token: str) -> str:
    # Type tokens contain "/" (aws:ec2/Foo:Foo): escape them as JSON-pointer segments.
    return "#/$defs/" + token.replace("~", "~0").replace("/", "~1")


def _json_schema(spec: Any) -> Spec:
    if not isinstance(spec, dict):
        return {}
    ref = spec.get("$ref")
    if isinstance(ref, str):
        if ref.startswith(LOCAL_TYPE_REF):
            return {"$ref": _pointer(ref[len(LOCAL_TYPE_REF) :])}
        return {}  # pulumi.json#/Any, Json, Asset, Archive, or another package's type: anything goes
    if "oneOf" in spec:
        # anyOf, not oneOf: a string that is also one of an enum's values matches both branches.
        return {"anyOf": [_json_schema(s) for s in spec["oneOf"]]}
    out: Spec = {}
    kind = spec.get("type")
    if kind:
        out["type"] = kind
    if "const" in spec:
        out["const"] = spec["const"]
    if "enum" in spec:
        out["enum"] = [e["value"] if isinstance(e, dict) else e for e in spec["enum"]]
    if kind == "array":
        out["items"] = _json_schema(spec.get("items", {}))
    if kind == "object":
        if "properties" in spec:
            out["properties"] = {k: _json_schema(v) for k, v in spec["properties"].items()}
            out["additionalProperties"] = False
            if spec.get("required"):
                out["required"] = list(spec["required"])
        elif "additionalProperties" in spec:
            out["additionalProperties"] = _json_schema(spec["additionalProperties"])
    return out


def entry(subset: Spec, token: str) -> Spec:
    """The subset's entry for a resource type or its provider; a KeyError names what is covered."""
    if token == PROVIDER_PREFIX + subset["name"] and "provider" in subset:
        found: Spec = subset["provider"]
        return found
    if token in subset["resources"]:
        found = subset["resources"][token]
        return found
    raise KeyError(
        f"{token} is not in the {subset['name']} schema subset (it covers {', '.join(sorted(subset['resources']))}): "
        "add it to scripts/derive_provider_schemas.py"
    )


def json_schema(subset: Spec, token: str) -> Spec:
    """The JSON Schema of one resource type's (or the provider's) inputs."""
    found = entry(subset, token)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": token,
        "type": "object",
        "properties": {k: _json_schema(v) for k, v in found["inputProperties"].items()},
        "required": list(found["requiredInputs"]),
        "additionalProperties": False,
        "$defs": {t: _json_schema(d) for t, d in subset["types"].items()},
    }


def _decoded(inputs: Spec, props: Spec) -> Spec:
    """The SDKs send provider configuration that is not a string as JSON text ("true",
    '{"tags": ...}'): decode those values, and only those, before checking them."""
    out: Spec = {}
    for key, value in inputs.items():
        if isinstance(value, str) and props.get(key, {}).get("type") != "string":
            try:
                value = json.loads(value)
            except ValueError:
                pass  # not JSON: let the schema say what is wrong with it
        out[key] = value
    return out


def validate(subset: Spec, token: str, inputs: Spec) -> list[str]:
    """``token: path: message`` for each way the inputs break the schema (empty: they fit).

    Numbers the engine delivers as floats (``22.0``) count as integers where they are whole.
    """
    if token.startswith(PROVIDER_PREFIX):
        inputs = _decoded(inputs, entry(subset, token)["inputProperties"])
    validator = Draft202012Validator(json_schema(subset, token))
    errors = sorted(validator.iter_errors(inputs), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{token}: {'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]
