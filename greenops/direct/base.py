"""What the three direct sets share: the context they are built from, the options every resource
gets, and the result they hand back."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from greenops.common.errors import RenderError
from greenops.renderers import RenderContext, RenderSettings

# What each cloud's direct set cannot do without, by greenops:render key, and why. Config Connector
# and ASO fall back to their namespace's project or the owner's id; a direct provider told nothing
# falls back to whatever the ambient credentials name.
NEEDS: dict[str, dict[str, str]] = {
    "azure": {
        "azureSubscriptionId": "the Azure provider must be told its subscription",
        "sshPublicKey": "Azure Linux VMs need an SSH public key",
    },
    "gcp": {"gcpProject": "the GCP provider must be told its project"},
    "aws": {},
}


def missing_settings(cloud: str, settings: RenderSettings) -> dict[str, str]:
    """The render settings ``cloud``'s direct set needs that ``settings`` lack: key -> why."""
    given = settings.model_dump(by_alias=True)
    return {key: why for key, why in NEEDS.get(cloud, {}).items() if not given.get(key)}


def require_settings(ctx: RenderContext) -> None:
    """Refuse to build a set whose provider would fall back to the ambient account."""
    missing = missing_settings(ctx.decision.provider, ctx.settings)
    if missing:
        raise RenderError(
            "; ".join(
                f"workload {ctx.workload.name!r}: {why}; set {key} in the render settings"
                for key, why in missing.items()
            )
        )


@dataclass(frozen=True)
class DirectSet:
    """One placed workload's cloud resources, created by the Pulumi provider itself (no operator).

    ``provider`` is the set's own provider resource, configured for the decision's region; every
    resource in ``resources`` (in the order declared, the provider not included) uses it and has the
    same parent. ``vm`` is the one whose existence is the VM's.
    """

    cloud: str
    provider: pulumi.ProviderResource
    resources: tuple[pulumi.CustomResource, ...]
    vm: pulumi.CustomResource
    resource_id: pulumi.Output[str]  # the cloud's own id of the VM: ARM id, GCP instance path, EC2 instance id
    private_ip: pulumi.Output[str]  # the VM's address in its subnet, assigned by the cloud


@dataclass(frozen=True)
class Placed:
    """Where a set hangs: the component that is its parent, and what it is created after."""

    parent: pulumi.Resource
    depends_on: tuple[pulumi.Resource, ...] = ()

    def provider_options(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self.parent, depends_on=list(self.depends_on))


def child_options(provider: pulumi.ProviderResource, placed: Placed) -> pulumi.ResourceOptions:
    """Every resource of a set: our regional provider (never the ambient default one) and the caller's
    parent. The cloud names are fixed (the renderers' names), so a replacement, such as a workload
    placed again in another region, must delete the old resource before its namesake is created."""
    return pulumi.ResourceOptions(
        provider=provider, parent=placed.parent, depends_on=list(placed.depends_on), delete_before_replace=True
    )
