"""A stand-in for the cloud provider plugins (pulumi-resource-aws, -gcp, -azure-native), for engine
tests of direct mode that need neither the real plugins nor cloud credentials.

It speaks the real plugin protocol to the real engine, so everything on our side of it runs as in
production: the program, the SDKs' serialisation, preview and up, replacements, deletes, the
Placement's steps. Behind it there is no cloud: Check validates every input against the providers'
published schema subsets (data/provider-schemas), Create and Delete write each change to a journal
(``GREENOPS_CLOUD_JOURNAL``, JSON lines) that stands for the cloud's inventory, and the outputs the
program reads back (ids, names, private addresses) are made up in each provider's shape.

    pulumi-resource-aws  ->  python -c "from tests.support.cloud_standin import main; main('aws')"
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from concurrent import futures
from pathlib import Path
from threading import Event, Lock
from typing import Any

import grpc
from google.protobuf import empty_pb2
from pulumi.output import Unknown
from pulumi.runtime import proto, rpc
from pulumi.runtime._grpc_settings import _GRPC_CHANNEL_OPTIONS
from pulumi.runtime.proto import ResourceProviderServicer, provider_pb2_grpc

from greenops.direct import schema

PACKAGES = {"aws": "aws", "gcp": "gcp", "azure-native": "azure-native"}
JOURNAL_ENV = "GREENOPS_CLOUD_JOURNAL"
# What the engine itself adds to a provider resource's inputs; not the provider's configuration.
ENGINE_KEYS = ("version", "pluginDownloadURL")
# A resource type the stand-in's cloud refuses to create (a quota, an outage), for failure tests.
REFUSE_ENV = "GREENOPS_CLOUD_REFUSE"
_LOCK = Lock()


def plugin_scripts(folder: Path, repo: Path) -> Path:
    """``folder`` holding an executable pulumi-resource-<name> for each cloud; put it first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        script = folder / f"pulumi-resource-{name}"
        script.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(repo)!r})\n"
            f"from tests.support.cloud_standin import main\nmain({name!r})\n"
        )
        script.chmod(0o755)
    return folder


def journal(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def inventory(path: Path) -> dict[str, dict[str, Any]]:
    """What exists in the stand-in's cloud now, by id: every create not deleted since."""
    alive: dict[str, dict[str, Any]] = {}
    for entry in journal(path):
        if entry["op"] == "create":
            alive[entry["id"]] = entry
        elif entry["op"] == "delete":
            alive.pop(entry["id"], None)
    return alive


def _unknown(value: Any) -> bool:
    return isinstance(value, Unknown) or (isinstance(value, str) and value == rpc.UNKNOWN)


def _known(value: Any) -> Any:
    """The value without unknowns (a preview's computed values) and secret wrappers, for validation."""
    if isinstance(value, dict):
        if rpc._special_sig_key in value and "value" in value:  # a secret: validate what it holds
            return _known(value["value"])
        return {k: _known(v) for k, v in value.items() if not _unknown(v)}
    if isinstance(value, list):
        return [_known(v) for v in value if not _unknown(v)]
    return value


def _serialise(props: Mapping[str, Any]) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(dict(props), {}))
    finally:
        loop.close()


def _made_up(token: str, urn: str, inputs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """An id and the outputs the cloud would compute, in the provider's own property names."""
    digest = hashlib.sha256(urn.encode()).hexdigest()
    name = urn.rsplit("::", 1)[-1]
    address = f"10.0.1.{int(digest[:2], 16) % 250 + 4}"
    outs: dict[str, Any] = dict(inputs)
    if token.startswith("aws:"):
        rid = {"Instance": "i-", "Vpc": "vpc-", "Subnet": "subnet-", "SecurityGroup": "sg-"}.get(
            token.rsplit(":", 1)[-1], "r-"
        ) + digest[:17]
        if token.endswith(":Instance"):
            outs["privateIp"] = address
    elif token.startswith("gcp:"):
        rid = f"projects/standin/{token.rsplit(':', 1)[-1].lower()}s/{inputs.get('name', name)}"
        if token.endswith(":Instance"):
            outs["networkInterfaces"] = [{**nic, "networkIp": address} for nic in inputs.get("networkInterfaces", [])]
    else:
        kind = token.rsplit(":", 1)[-1]
        own = next((v for k, v in inputs.items() if k.endswith("Name") and k[0].lower() == kind[0].lower()), name)
        rid = f"/subscriptions/standin/resourceGroups/{inputs.get('resourceGroupName', own)}/{kind}/{own}"
        outs["name"] = own
        if kind == "NetworkInterface":
            outs["ipConfigurations"] = [{**c, "privateIPAddress": address} for c in inputs.get("ipConfigurations", [])]
    return rid, outs


class CloudStandin(ResourceProviderServicer):
    def __init__(self, cloud: str):
        self.cloud = cloud
        self.subset = schema.load(PACKAGES[cloud])
        self.version = self.subset.get("version", "0.0.0")

    # -- provider ------------------------------------------------------------------------------
    def GetPluginInfo(self, request, context):  # type: ignore[no-untyped-def]
        return proto.PluginInfo(version=self.version)

    def GetSchema(self, request, context):  # type: ignore[no-untyped-def]
        return proto.GetSchemaResponse(schema="{}")

    def CheckConfig(self, request, context):  # type: ignore[no-untyped-def]
        return self._check(f"{schema.PROVIDER_PREFIX}{PACKAGES[self.cloud]}", request)

    def DiffConfig(self, request, context):  # type: ignore[no-untyped-def]
        return self._diff(request)

    def Configure(self, request, context):  # type: ignore[no-untyped-def]
        return proto.ConfigureResponse(acceptSecrets=True, supportsPreview=False)

    # -- resources -----------------------------------------------------------------------------
    def Check(self, request, context):  # type: ignore[no-untyped-def]
        return self._check(request.urn.split("::")[-2].split("$")[-1], request)

    def Diff(self, request, context):  # type: ignore[no-untyped-def]
        return self._diff(request)

    def Create(self, request, context):  # type: ignore[no-untyped-def]
        inputs = rpc.deserialize_properties(request.properties)
        token = request.urn.split("::")[-2].split("$")[-1]
        if os.environ.get(REFUSE_ENV) == token:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{token}: the cloud refused to create it (quota)")
        rid, outs = _made_up(token, request.urn, inputs)
        self._write({"op": "create", "id": rid, "type": token, "urn": request.urn, "inputs": _known(inputs)})
        return proto.CreateResponse(id=rid, properties=_serialise(outs))

    def Read(self, request, context):  # type: ignore[no-untyped-def]
        return proto.ReadResponse(id=request.id, properties=request.properties, inputs=request.inputs)

    def Update(self, request, context):  # type: ignore[no-untyped-def]
        news = rpc.deserialize_properties(request.news)
        token = request.urn.split("::")[-2].split("$")[-1]
        _, outs = _made_up(token, request.urn, news)
        self._write({"op": "update", "id": request.id, "type": token, "urn": request.urn, "inputs": _known(news)})
        return proto.UpdateResponse(properties=_serialise(outs))

    def Delete(self, request, context):  # type: ignore[no-untyped-def]
        token = request.urn.split("::")[-2].split("$")[-1]
        self._write({"op": "delete", "id": request.id, "type": token, "urn": request.urn})
        return empty_pb2.Empty()

    def Cancel(self, request, context):  # type: ignore[no-untyped-def]
        return empty_pb2.Empty()

    # -- the pieces ----------------------------------------------------------------------------
    def _check(self, token: str, request: Any) -> Any:
        news = rpc.deserialize_properties(request.news, True)
        if token.startswith(schema.PROVIDER_PREFIX):
            news = {k: v for k, v in news.items() if k not in ENGINE_KEYS}
        # A preview's computed inputs (an id not created yet) are left out, and not missed.
        pending = [f"'{k}' is a required property" for k, v in news.items() if _unknown(v)]
        problems = schema.validate(self.subset, token, _known(news))
        failures = [
            proto.CheckFailure(property=token, reason=problem)
            for problem in problems
            if not any(problem.endswith(p) for p in pending)
        ]
        return proto.CheckResponse(inputs=request.news, failures=failures)

    @staticmethod
    def _diff(request: Any) -> Any:
        # (olds are the recorded outputs; what the program said last time is old_inputs)
        olds = rpc.deserialize_properties(request.old_inputs or request.olds, True)
        news = rpc.deserialize_properties(request.news, True)
        changed = sorted(k for k in set(olds) | set(news) if olds.get(k) != news.get(k))
        if not changed:
            return proto.DiffResponse(changes=proto.DiffResponse.DIFF_NONE)
        # Every change replaces: enough for a stand-in, and the cautious reading of any property.
        return proto.DiffResponse(changes=proto.DiffResponse.DIFF_SOME, replaces=changed, diffs=changed)

    @staticmethod
    def _write(entry: dict[str, Any]) -> None:
        path = os.environ.get(JOURNAL_ENV)
        if not path:
            return
        with _LOCK, open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


def main(cloud: str) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=_GRPC_CHANNEL_OPTIONS)
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(CloudStandin(cloud), server)
    port = server.add_insecure_port(address="127.0.0.1:0")
    server.start()
    sys.stdout.buffer.write(f"{port}\n".encode())
    sys.stdout.flush()
    Event().wait()
