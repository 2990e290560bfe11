"""Building one direct set under the mocks and waiting until the engine has seen all of it."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from greenops.direct import DirectSet


@dataclass
class Settled:
    """What the set's outputs resolved to once every resource was registered."""

    provider_ref: str  # how a resource names its provider to the engine: "<urn>::<id>"
    provider_urn: str
    urns: list[str]
    resource_id: str
    private_ip: str


def settle(built: DirectSet) -> pulumi.Output[Settled]:
    """Resolves once every resource of the set is registered (its URN known)."""
    return pulumi.Output.all(
        built.provider.urn, built.provider.id, [r.urn for r in built.resources], built.resource_id, built.private_ip
    ).apply(lambda v: Settled(f"{v[0]}::{v[1]}", v[0], list(v[2]), v[3], v[4]))
