"""KrateoPlatform: Krateo core-provider and the VmTemplate CompositionDefinition (thesis §3.3)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.hardening import CONTAINER_SECURITY, POD_SECURITY, Resources
from components.helm import release
from components.pins import ChartPin
from components.platform_config import KrateoConfig

# The chart's scaffold keys (podSecurityContext, securityContext, resources): empty by default. The
# composition-dynamic-controllers core-provider generates from its own template take none of these.
CORE_PROVIDER_VALUES = {
    "podSecurityContext": POD_SECURITY,
    "securityContext": CONTAINER_SECURITY,
    "resources": Resources(cpu="50m", memory="128Mi", cpu_limit="500m", memory_limit="256Mi").json(),
}


@dataclass
class KrateoArgs:
    config: KrateoConfig
    core_provider: ChartPin


class KrateoPlatform(pulumi.ComponentResource):
    def __init__(self, name: str, args: KrateoArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("greenops:platform:KrateoPlatform", name, None, opts)
        c = args.config
        self.core_provider = release(
            f"{name}-core-provider", args.core_provider, c.namespace, CORE_PROVIDER_VALUES, self
        )
        # The CompositionDefinition makes core-provider generate the VmTemplate CRD from the chart's
        # values.schema.json and run a composition-dynamic-controller for it.
        self.composition = k8s.apiextensions.CustomResource(
            f"{name}-vmtemplate",
            api_version="core.krateo.io/v1alpha1",
            kind="CompositionDefinition",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="vmtemplate", namespace=c.composition_namespace),
            spec={"chart": {"url": f"{c.vm_template_chart_url}/vm-template", "version": c.vm_template_chart_version}},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.core_provider]),
        )
        self.register_outputs({"coreProviderVersion": args.core_provider.version})
