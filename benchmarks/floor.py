"""The engine's floor for a stack: the same resource graph as a real greenops stack, registered by
a program whose providers do nothing.

The graph is read from the real stack's state (``graph``): each component becomes a local
ComponentResource of the same type, name and parent; each custom resource (the Placement, the
VM's objects) a dynamic resource whose provider answers at once and records nothing. What a
greenops stack costs beyond this floor is the work of its own providers and program: OPA, the
scheduler, rendering, the ConfigGroups' Construct calls and the outputs they carry.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi import dynamic

SKIPPED = ("pulumi:pulumi:Stack", "pulumi:providers:")
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"


@dataclass(frozen=True)
class Node:
    urn: str
    type: str
    custom: bool
    parent: str | None


def graph(deployment: dict) -> list[Node]:
    """A stack's resources in state order (parents first), without the stack and the providers."""
    return [
        Node(r["urn"], r["type"], bool(r.get("custom")), r.get("parent"))
        for r in deployment.get("resources") or []
        if not r["type"].startswith(SKIPPED)
    ]


def previewed(nodes: list[Node]) -> list[Node]:
    """What a preview of an empty stack registers: a ConfigGroup's objects come from its Placement's
    outputs, unknown before the first update, so none of them."""
    groups = {n.urn for n in nodes if n.type == CONFIG_GROUP}
    return [n for n in nodes if n.parent not in groups]


class NothingProvider(dynamic.ResourceProvider):
    """Creates, diffs and deletes nothing: every answer is immediate and empty."""

    def create(self, props):
        return dynamic.CreateResult(id_="nothing", outs={})

    def diff(self, _id, _olds, _news):
        return dynamic.DiffResult(changes=False)

    def delete(self, _id, _props):
        pass


class Nothing(dynamic.Resource):
    def __init__(self, name: str, opts: pulumi.ResourceOptions):
        super().__init__(NothingProvider(), name, {}, opts)


def program(nodes: list[Node]):
    """A Pulumi program registering ``nodes``: a resource's name is its real name and type, so two
    resources of different types with one name (a VM and its NIC) stay two."""

    def run() -> None:
        made: dict[str, pulumi.Resource] = {}
        for node in nodes:
            opts = pulumi.ResourceOptions(parent=made.get(node.parent or ""))
            name = node.urn.rsplit("::", 1)[1]
            if node.custom:
                made[node.urn] = Nothing(f"{name}@{node.type}", opts)
            else:
                component = pulumi.ComponentResource(node.type, name, None, opts)
                component.register_outputs({})  # as every real component does
                made[node.urn] = component

    return run
