#!/usr/bin/env python3
"""Derive the subsets of the cloud providers' Pulumi schemas that the direct sets are checked against.

Usage:  python scripts/derive_provider_schemas.py [--out data/provider-schemas]
        python scripts/derive_provider_schemas.py --check
        python scripts/derive_provider_schemas.py --package aws --schema aws-7.51.1.json

greenops/direct builds each placed workload's VM and network as resources of pulumi-azure-native,
pulumi-gcp and pulumi-aws. Its tests run under Pulumi's mocks, where no provider looks at the inputs,
so they check every resource's inputs against the provider's own schema instead. This script writes
the part of each schema they need, ``data/provider-schemas/{azure-native,gcp,aws}.json``: only the
resource types and the provider configuration the direct sets use (``SUBSETS`` below), and of those
only the properties the sets set, plus each type's required inputs. A property outside the subset
is then rejected like a misspelt one; to use a new property, add its path to ``SUBSETS`` and run
this script again.

Where the schemas come from. A provider's published schema (schema.json) is the source of truth,
but it could not be fetched where this was written: the pulumi-aws and pulumi-azure-native
repositories are too large to fetch there (and pulumi-azure-native commits no schema: its build
generates one), and the pulumi-gcp snapshot available lacks schema.json at the pinned version. So by
default the subsets are read from the installed Python SDKs, at the versions pyproject.toml pins.
Each SDK is generated from its schema at that version, and its Args classes carry what validation
needs: the camelCase names (``@pulumi.getter(name=...)``), the types (the getters' annotations),
the enums (``_enums.py``) and which inputs are required (Args ``__init__`` parameters without a
default, cross-checked against the SDK's own "Missing required property" checks). The SDK does not
carry descriptions, defaults, or the secret and replace-on-change flags, and the tokens of nested
types are rebuilt in the schema's pattern (``aws:ec2/InstanceMetadataOptions:InstanceMetadataOptions``).

From a real schema. On a machine that has the provider plugins, ``pulumi package get-schema
aws@7.51.1 > aws-7.51.1.json`` (likewise ``gcp@10.2.0`` and ``azure-native@3.29.0``) writes the
published schema; ``--package aws --schema aws-7.51.1.json`` (``.json.gz`` is read too) then cuts it
down to the same subset in the same shape, so the tests need no change. The schema's version must
be the installed SDK's. This path has so far been exercised only on schema-shaped files, never on a
published schema.json.

Output shape (the Pulumi schema's own, cut down):
  {"name", "version", "source", "provider": {"inputProperties", "requiredInputs"},
   "resources": {token: {"inputProperties", "requiredInputs"}}, "types": {token: ObjectType | EnumType}}
A ``oneOf`` of a string and an enum accepts any string, so it is written as a plain string: it checks
nothing less, and it keeps the files small (aws's InstanceType enum alone is about 38 KB).

``--check`` derives again and compares with the committed files (tests/direct runs the same check):
after an SDK upgrade that renames, retypes or removes a property the direct sets use, it fails.
"""

from __future__ import annotations

import argparse
import enum
import gzip
import importlib
import importlib.resources
import inspect
import json
import re
import sys
import typing
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from greenops.direct.schema import LOCAL_TYPE_REF, PROVIDER_PREFIX, SCHEMA_DIR, Spec


@dataclass(frozen=True)
class Subset:
    sdk: str  # the Python SDK module generated from the package's schema
    keep: dict[str, list[str]]  # token -> dotted camelCase paths the direct sets set


# What greenops/direct sets, per package: SDK defaults the engine sends too are listed (the aws
# provider's skip* flags, azure-native's environment and its subnets' network policies). A path
# that stops at an object keeps all of it; lists and maps are passed through (``a.b`` reaches the
# ``b`` of every item of a list ``a``).
SUBSETS: dict[str, Subset] = {
    "azure-native": Subset(
        sdk="pulumi_azure_native",
        keep={
            "pulumi:providers:azure-native": ["environment", "location", "subscriptionId"],
            "azure-native:resources:ResourceGroup": ["resourceGroupName", "location", "tags"],
            "azure-native:network:VirtualNetwork": [
                "virtualNetworkName",
                "location",
                "addressSpace",
                "enableDdosProtection",
                "enableVmProtection",
                "tags",
            ],
            "azure-native:network:Subnet": [
                "subnetName",
                "addressPrefix",
                "privateEndpointNetworkPolicies",
                "privateLinkServiceNetworkPolicies",
            ],
            "azure-native:network:NetworkInterface": [
                "networkInterfaceName",
                "location",
                "ipConfigurations.name",
                "ipConfigurations.privateIPAllocationMethod",
                "ipConfigurations.subnet.id",
                "ipConfigurations.subnet.privateEndpointNetworkPolicies",
                "ipConfigurations.subnet.privateLinkServiceNetworkPolicies",
                "tags",
            ],
            "azure-native:compute:VirtualMachine": [
                "vmName",
                "location",
                "hardwareProfile.vmSize",
                "storageProfile.imageReference",
                "storageProfile.osDisk.createOption",
                "storageProfile.osDisk.deleteOption",
                "osProfile.computerName",
                "osProfile.adminUsername",
                "osProfile.customData",
                "osProfile.linuxConfiguration.disablePasswordAuthentication",
                "osProfile.linuxConfiguration.ssh",
                "networkProfile.networkInterfaces",
                "tags",
            ],
        },
    ),
    "gcp": Subset(
        sdk="pulumi_gcp",
        keep={
            "pulumi:providers:gcp": ["project", "region"],
            "gcp:compute/network:Network": ["name", "autoCreateSubnetworks", "routingMode"],
            "gcp:compute/subnetwork:Subnetwork": ["name", "network", "region", "ipCidrRange"],
            "gcp:compute/instance:Instance": [
                "name",
                "zone",
                "machineType",
                "bootDisk.autoDelete",
                "bootDisk.initializeParams.image",
                "bootDisk.initializeParams.size",
                "bootDisk.initializeParams.type",
                "networkInterfaces.subnetwork",
                "metadata",
                "labels",
            ],
        },
    ),
    "aws": Subset(
        sdk="pulumi_aws",
        keep={
            "pulumi:providers:aws": ["region", "skipCredentialsValidation", "skipRegionValidation"],
            "aws:ec2/vpc:Vpc": ["cidrBlock", "enableDnsHostnames", "enableDnsSupport", "tags"],
            "aws:ec2/subnet:Subnet": ["vpcId", "cidrBlock", "availabilityZone", "tags"],
            "aws:ec2/securityGroup:SecurityGroup": ["name", "description", "vpcId", "egress", "tags"],
            "aws:ec2/instance:Instance": [
                "ami",
                "instanceType",
                "subnetId",
                "vpcSecurityGroupIds",
                "metadataOptions.httpTokens",
                "userDataBase64",
                "tags",
            ],
        },
    ),
}


def sdk_version(module: str) -> str:
    """The version of the package the installed SDK was generated from (its pulumi-plugin.json)."""
    plugin = json.loads((importlib.resources.files(module) / "pulumi-plugin.json").read_text(encoding="utf-8"))
    return str(plugin["version"])


def _entries(subset: Spec) -> dict[str, Spec]:
    """Token -> resource entry, the provider's under its ``pulumi:providers:<name>`` token."""
    entries = dict(subset["resources"])
    if "provider" in subset:
        entries[PROVIDER_PREFIX + subset["name"]] = subset["provider"]
    return entries


def _assemble(name: str, version: str, source: str, entries: dict[str, Spec], types: dict[str, Spec]) -> Spec:
    provider = entries.pop(PROVIDER_PREFIX + name, None)
    out: Spec = {"name": name, "version": version, "source": source}
    if provider is not None:
        out["provider"] = provider
    out["resources"] = entries
    out["types"] = dict(sorted(types.items()))
    return out


def _type_refs(spec: Any) -> Iterator[str]:
    """Every local type token a spec (or a map of them) refers to."""
    if isinstance(spec, dict):
        ref = spec.get("$ref")
        if isinstance(ref, str) and ref.startswith(LOCAL_TYPE_REF):
            yield ref[len(LOCAL_TYPE_REF) :]
        for key, value in spec.items():
            if key != "$ref":
                yield from _type_refs(value)
    elif isinstance(spec, list):
        for item in spec:
            yield from _type_refs(item)


# -- from a published schema.json -------------------------------------------------------------------
# What validation does not need: documentation, code generation hints, defaults and flags.
_DROP = {
    "description",
    "language",
    "deprecationMessage",
    "willReplaceOnChanges",
    "replaceOnChanges",
    "default",
    "defaultInfo",
    "isOverlay",
    "plain",
    "secret",
}


def _strip(spec: Any) -> Any:
    """The spec without docs; local ``$ref``s decoded (published schemas may write ``/`` as ``%2F``)."""
    if isinstance(spec, list):
        return [_strip(v) for v in spec]
    if not isinstance(spec, dict):
        return spec
    out: Spec = {}
    for key, value in spec.items():
        if key in _DROP:
            continue
        # a map of property names: a property may well be called "description" or "default"
        out[key] = _properties(value) if key == "properties" else _strip(value)
    if isinstance(out.get("$ref"), str) and out["$ref"].startswith(LOCAL_TYPE_REF):
        out["$ref"] = unquote(out["$ref"])
    return out


def _properties(props: dict[str, Any]) -> dict[str, Any]:
    return {name: _strip(spec) for name, spec in sorted(props.items())}


def load_schema(path: Path) -> Spec:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        schema: Spec = json.load(fh)
    return schema


def from_schema(schema: Spec, tokens: list[str], source: str) -> Spec:
    """The tokens' inputs and every type they reach, from a published schema."""
    name = schema["name"]
    entries: dict[str, Spec] = {}
    types: dict[str, Spec] = {}
    pending: list[str] = []
    for token in tokens:
        spec = schema["provider"] if token == PROVIDER_PREFIX + name else schema["resources"][token]
        props = _properties(spec.get("inputProperties", {}))
        entries[token] = {
            "inputProperties": props,
            "requiredInputs": sorted(spec.get("requiredInputs", [])),
        }
        pending += _type_refs(props)
    while pending:
        token = pending.pop()
        if token not in types:
            types[token] = _strip(schema["types"][token])
            pending += _type_refs(types[token])
    return _assemble(name, schema["version"], source, entries, types)


# -- from the installed Python SDK ------------------------------------------------------------------
class _SdkReader:
    """Rebuilds schema specs from an SDK's input types, collecting the object and enum types met."""

    def __init__(self, module: str):
        self.sdk = importlib.import_module(module)
        plugin = json.loads((importlib.resources.files(module) / "pulumi-plugin.json").read_text(encoding="utf-8"))
        self.package: str = plugin["name"]
        self.types: dict[str, Spec] = {}

    def resource_class(self, token: str) -> type:
        if token.startswith(PROVIDER_PREFIX):
            return typing.cast(type, self.sdk.Provider)
        # aws:ec2/instance:Instance -> ec2.Instance; azure-native:compute:VirtualMachine -> compute.VirtualMachine
        _, module, name = token.split(":")
        module = module.split("/")[0]
        mod = self.sdk if module == "index" else importlib.import_module(f"{self.sdk.__name__}.{module}")
        cls = getattr(mod, name)
        declared = re.search(r"super\(\w+, __self__\).__init__\(\s*'([^']+)'", inspect.getsource(cls))
        if not declared or declared.group(1) != token:
            raise ValueError(f"{cls.__module__}.{name} registers {declared and declared.group(1)}, not {token}")
        return typing.cast(type, cls)

    @staticmethod
    def args_class(resource_cls: type) -> type:
        """The Args class the resource parses: azure-native's Subnet takes SubnetInitArgs, since
        SubnetArgs is the nested input type of the same name."""
        used = re.search(r"get_resource_args_opts\((\w+),", inspect.getsource(resource_cls))
        if used is None:
            raise ValueError(f"{resource_cls.__name__}: cannot tell which Args class it parses")
        return typing.cast(type, getattr(sys.modules[resource_cls.__module__], used.group(1)))

    def type_token(self, cls: type) -> str:
        module = cls.__module__.split(".")[1]  # pulumi_aws.ec2._inputs -> ec2
        module = "index" if module.startswith("_") else module
        name = cls.__name__.removesuffix("Args")
        if self.package == "azure-native":
            return f"{self.package}:{module}:{name}"
        return f"{self.package}:{module}/{name}:{name}"

    @staticmethod
    def _unwrap(tp: Any) -> Any:
        """Input[T] is Union[T, Awaitable[T], Output[T]]: keep T (and a real union's members), drop None."""
        import pulumi

        if typing.get_origin(tp) is not typing.Union:
            return tp
        members: list[Any] = []
        for arg in typing.get_args(tp):
            if arg is type(None) or arg is pulumi.Output or typing.get_origin(arg) in (Awaitable, pulumi.Output):
                continue
            arg = _SdkReader._unwrap(arg)
            for member in typing.get_args(arg) if typing.get_origin(arg) is typing.Union else (arg,):
                if member not in members:
                    members.append(member)
        return members[0] if len(members) == 1 else typing.Union[tuple(members)]  # noqa: UP007 (built at run time)

    def spec(self, tp: Any) -> Spec:
        import pulumi

        tp = self._unwrap(tp)
        origin = typing.get_origin(tp)
        if origin is typing.Union:
            return {"oneOf": [self.spec(a) for a in typing.get_args(tp)]}
        if origin in (list, Sequence):
            return {"type": "array", "items": self.spec(typing.get_args(tp)[0])}
        if origin in (dict, Mapping):
            return {"type": "object", "additionalProperties": self.spec(typing.get_args(tp)[1])}
        simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
        if tp in simple:
            return {"type": simple[tp]}
        if tp is typing.Any or tp is object:
            return {"$ref": "pulumi.json#/Any"}
        if inspect.isclass(tp) and issubclass(tp, (pulumi.Asset, pulumi.Archive)):
            return {"$ref": "pulumi.json#/" + ("Asset" if issubclass(tp, pulumi.Asset) else "Archive")}
        if inspect.isclass(tp) and issubclass(tp, enum.Enum):
            token = self.type_token(tp)
            if token not in self.types:
                base = "integer" if issubclass(tp, int) else "number" if issubclass(tp, float) else "string"
                self.types[token] = {"type": base, "enum": [{"value": m.value} for m in tp]}
            return {"$ref": LOCAL_TYPE_REF + token}
        if inspect.isclass(tp) and pulumi._types.is_input_type(tp):
            token = self.type_token(tp)
            if token not in self.types:
                self.types[token] = {}  # a recursive type meets itself: the guard
                props, required = self.properties(tp)
                self.types[token] = {
                    "type": "object",
                    "properties": props,
                    **({"required": required} if required else {}),
                }
            return {"$ref": LOCAL_TYPE_REF + token}
        raise TypeError(f"no schema type for the SDK's {tp!r}")

    def properties(self, args_cls: type) -> tuple[dict[str, Spec], list[str]]:
        """camelCase name -> spec of every input, and the required ones (no default in ``__init__``)."""
        import pulumi

        globalns = pulumi._types._globals_for_cls(args_cls)
        localns = {"Output": pulumi.Output, "T": type(None)}
        props: dict[str, Spec] = {}
        names: dict[str, str] = {}
        for py_name, pulumi_name, prop in pulumi._types._py_properties(args_cls):
            hint = typing.get_type_hints(prop.fget, globalns=globalns, localns=localns)["return"]
            props[pulumi_name] = self.spec(hint)
            names[py_name] = pulumi_name
        params = inspect.signature(args_cls.__init__).parameters.values()
        required = sorted(names[p.name] for p in params if p.default is inspect.Parameter.empty and p.name in names)
        return dict(sorted(props.items())), required


def from_sdk(module: str, tokens: list[str]) -> Spec:
    """The tokens' inputs and every type they reach, read from the installed SDK."""
    import pulumi

    reader = _SdkReader(module)
    entries: dict[str, Spec] = {}
    for token in tokens:
        cls = reader.resource_class(token)
        args_cls = reader.args_class(cls)
        props, required = reader.properties(args_cls)
        # The resource's own check of its required inputs must agree with what the signature says.
        py_to_camel = pulumi._types.input_type_py_to_pulumi_names(args_cls)
        enforced = sorted(
            py_to_camel[p] for p in re.findall(r"Missing required property '(\w+)'", inspect.getsource(cls))
        )
        if enforced != required:
            raise ValueError(f"{token}: its Args signature requires {required}, the resource checks {enforced}")
        entries[token] = {"inputProperties": props, "requiredInputs": required}
    version = sdk_version(module)
    source = f"{module} {version} Python SDK (generated from the provider schema; nested type tokens rebuilt)"
    return _assemble(reader.package, version, source, entries, reader.types)


# -- cutting down to what the direct sets use -------------------------------------------------------
def collapse_open_enums(subset: Spec) -> Spec:
    """``oneOf: [string, enum]`` accepts any string: write it as a string, and drop enums left unused."""
    types = subset["types"]

    def is_open(one: list[Any]) -> bool:
        def enum_ref(s: Spec) -> bool:
            ref = s.get("$ref", "")
            return ref.startswith(LOCAL_TYPE_REF) and "enum" in types.get(ref[len(LOCAL_TYPE_REF) :], {})

        return {"type": "string"} in one and all(s == {"type": "string"} or enum_ref(s) for s in one)

    def fix(spec: Any) -> Any:
        if isinstance(spec, dict):
            if isinstance(spec.get("oneOf"), list) and is_open(spec["oneOf"]):
                return {"type": "string"}
            return {k: fix(v) for k, v in spec.items()}
        if isinstance(spec, list):
            return [fix(v) for v in spec]
        return spec

    entries = {token: fix(entry) for token, entry in _entries(subset).items()}
    fixed = _assemble(subset["name"], subset["version"], subset["source"], entries, fix(types))
    return prune(fixed, {})


def _heads(paths: list[str], props: dict[str, Spec], required: list[str], where: str) -> dict[str, list[str] | None]:
    """One level of the paths: property -> the paths below it (None: keep everything below)."""
    heads: dict[str, list[str] | None] = {r: [] for r in required}
    for path in paths:
        head, _, rest = path.partition(".")
        if head not in props:
            raise KeyError(f"{head!r} is not an input property of {where}")
        if not rest:
            heads[head] = None
        else:
            below = heads.setdefault(head, [])
            if below is not None:
                below.append(rest)
    return heads


def prune(subset: Spec, keep: dict[str, list[str]]) -> Spec:
    """Per token, its required inputs and the ``keep`` paths (all inputs of a token not in ``keep``),
    and of the types only what those still reach."""
    kept: dict[str, set[str] | None] = {}  # type token -> property names kept (None: all of them)

    def walk(spec: Any, paths: list[str] | None) -> None:
        for token in _type_refs(spec):
            tdef = subset["types"][token]
            if "properties" not in tdef or paths is None or kept.get(token, set()) is None:
                already_whole = kept.get(token, set()) is None
                kept[token] = None
                if "properties" in tdef and not already_whole:
                    for prop in tdef["properties"].values():
                        walk(prop, None)
                continue
            heads = _heads(paths, tdef["properties"], tdef.get("required", []), token)
            kept[token] = (kept.get(token) or set()) | set(heads)
            for name, below in heads.items():
                walk(tdef["properties"][name], below)

    entries: dict[str, Spec] = {}
    for token, entry in _entries(subset).items():
        props = entry["inputProperties"]
        paths = keep.get(token)
        heads = dict.fromkeys(props, None) if paths is None else _heads(paths, props, entry["requiredInputs"], token)
        for name, below in heads.items():
            walk(props[name], below)
        entries[token] = {
            "inputProperties": {k: props[k] for k in sorted(heads)},
            "requiredInputs": entry["requiredInputs"],
        }
    types: dict[str, Spec] = {}
    for token, names in kept.items():
        tdef = dict(subset["types"][token])
        if names is not None and "properties" in tdef:
            tdef["properties"] = {k: v for k, v in tdef["properties"].items() if k in names}
        types[token] = tdef
    return _assemble(subset["name"], subset["version"], subset["source"], entries, types)


def derive(package: str, schema: Path | None = None) -> Spec:
    """The committed subset of ``package``, from the installed SDK or from a published schema."""
    table = SUBSETS[package]
    tokens = list(table.keep)
    if schema is None:
        full = from_sdk(table.sdk, tokens)
    else:
        published = load_schema(schema)
        installed = sdk_version(table.sdk)
        if (published.get("name"), published.get("version")) != (package, installed):
            raise ValueError(
                f"{schema} is {published.get('name')} {published.get('version')}; the installed {table.sdk} "
                f"is {package} {installed}"
            )
        full = from_schema(published, tokens, f"{package} {installed} schema.json (pulumi package get-schema)")
    return prune(collapse_open_enums(full), table.keep)


def render(subset: Spec) -> str:
    return json.dumps(subset, indent=1) + "\n"


# -- comparing with the committed files -------------------------------------------------------------
def signature(subset: Spec) -> dict[str, str]:
    """``token path -> what is there``: a form in which subsets from the SDK and from a published
    schema compare equal although their nested type tokens differ."""
    flat: dict[str, str] = {}

    def visit(spec: Any, path: str, seen: tuple[str, ...]) -> None:
        ref = spec.get("$ref", "")
        if ref.startswith(LOCAL_TYPE_REF):
            token = ref[len(LOCAL_TYPE_REF) :]
            tdef = subset["types"][token]
            if token in seen:
                flat[path] = "recursive"
            elif "enum" in tdef:
                flat[path] = f"enum {tdef['type']} " + ",".join(sorted(str(e["value"]) for e in tdef["enum"]))
            else:
                visit(tdef, path, (*seen, token))
        elif ref:
            flat[path] = ref
        elif "oneOf" in spec:
            flat[path] = "oneOf"
            for i, branch in enumerate(spec["oneOf"]):
                visit(branch, f"{path}|{i}", seen)
        elif "properties" in spec:
            flat[path] = "object required=" + ",".join(sorted(spec.get("required", [])))
            for name, prop in spec["properties"].items():
                visit(prop, f"{path}.{name}", seen)
        elif spec.get("type") == "array":
            flat[path] = "array"
            visit(spec.get("items", {}), f"{path}[]", seen)
        elif "additionalProperties" in spec:
            flat[path] = "map"
            visit(spec["additionalProperties"], f"{path}{{}}", seen)
        else:
            flat[path] = str(spec.get("type", "any")) + (f" const={spec['const']!r}" if "const" in spec else "")

    for token, entry in sorted(_entries(subset).items()):
        flat[token] = "required=" + ",".join(entry["requiredInputs"])
        for name, prop in entry["inputProperties"].items():
            visit(prop, f"{token} {name}", ())
    return flat


def differences(package: str, committed: Spec, derived: Spec) -> list[str]:
    """Why the committed subset of ``package`` no longer matches the installed SDK (empty: it does)."""
    found = [
        f"{package}: {key} is {committed.get(key)!r} in the committed file, {derived[key]!r} now"
        for key in ("name", "version")
        if committed.get(key) != derived[key]
    ]
    old, new = signature(committed), signature(derived)
    for path in sorted(old.keys() | new.keys()):
        if old.get(path) != new.get(path):
            found.append(f"{package}: {path}: committed {old.get(path)!r}, derived {new.get(path)!r}")
    # A file derived from the SDK must also be exactly what the script writes now.
    if not found and committed.get("source") == derived["source"] and render(committed) != render(derived):
        found.append(f"{package}: the committed file is not what this script writes; run it again")
    return found


def check(out: Path) -> list[str]:
    """Every difference between the committed subsets in ``out`` and the installed SDKs."""
    found: list[str] = []
    for package in SUBSETS:
        path = out / f"{package}.json"
        if not path.exists():
            found.append(f"{package}: {path.name} is missing; run scripts/derive_provider_schemas.py")
            continue
        found += differences(package, json.loads(path.read_text(encoding="utf-8")), derive(package))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out", type=Path, default=SCHEMA_DIR, help="folder of the subsets (default: data/provider-schemas)"
    )
    parser.add_argument("--check", action="store_true", help="compare with the committed subsets instead of writing")
    parser.add_argument("--package", choices=sorted(SUBSETS), help="only this package")
    parser.add_argument("--schema", type=Path, help="derive --package from this published schema (.json or .json.gz)")
    args = parser.parse_args(argv)
    if args.schema and not args.package:
        parser.error("--schema needs --package")
    if args.check:
        found = check(args.out)
        print("\n".join(found) or f"the subsets in {args.out} match the installed SDKs")
        return 1 if found else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for package in [args.package] if args.package else list(SUBSETS):
        subset = derive(package, args.schema)
        text = render(subset)
        (args.out / f"{package}.json").write_text(text, encoding="utf-8")
        print(f"{package}.json: {len(text)} bytes, {len(subset['resources'])} resources, {len(subset['types'])} types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
