"""Direct provisioning: a placed workload's VM and network as Pulumi resources of the cloud's own
provider (pulumi-azure-native, pulumi-gcp, pulumi-aws), instead of Kubernetes objects for an
operator. Names, labels and tags are the renderers' (greenops.renderers), so both modes leave the
same marks in the cloud.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from greenops.catalog import Catalog, load_catalog
from greenops.common.errors import RenderError
from greenops.models import Decision, Workload
from greenops.renderers import RenderContext, RenderSettings

from .base import DirectSet, Placed, require_settings

CLOUDS = ("aws", "azure", "gcp")


def build(
    workload: Workload,
    decision: Decision,
    settings: RenderSettings,
    parent: pulumi.Resource,
    *,
    depends_on: Sequence[pulumi.Resource] = (),
    catalog: Catalog | None = None,
    azure_existing_group: bool = False,
) -> DirectSet:
    """The direct set for the decision's cloud, every resource a child of ``parent`` created after
    ``depends_on`` (the Placement, whose step must be recorded first); each cloud's
    module is imported only when a decision needs it (the SDKs are large). Names, labels and tags
    come from the renderers' own context, as in operator mode."""
    ctx = RenderContext(workload, decision, settings, catalog or load_catalog())
    require_settings(ctx)
    placed = Placed(parent, tuple(depends_on))
    if decision.provider == "azure":
        from . import azure

        return azure.build(ctx, placed, existing_group=azure_existing_group)
    if decision.provider == "gcp":
        from . import gcp

        return gcp.build(ctx, placed)
    if decision.provider == "aws":
        from . import aws

        return aws.build(ctx, placed)
    raise RenderError(f"workload {workload.name!r}: no direct set for provider {decision.provider!r}")


__all__ = ["CLOUDS", "DirectSet", "build"]
